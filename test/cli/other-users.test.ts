// SPEC §18 "Other users" end to end: alice and mallory are real local accounts (test/helpers/users.ts), and
// mallory tries to make alice's li run her code, read her settings or drop her ledger.

import { beforeAll, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { handlerHost } from "../../src/notify/host.ts";
import { ledgerEnvFor, onPostgres } from "../helpers/backends.ts";
import { ledgerRows } from "../helpers/ledger-rows.ts";
import { tempDir } from "../helpers/temp-dirs.ts";
import { until } from "../helpers/until.ts";
import { describeAsUsers, liAs, localUser, spawnAsUser, type LocalUser } from "../helpers/users.ts";

let alice: LocalUser;
let mallory: LocalUser;
/** Root's 0755 directory, where each test makes the directories both users reach. */
let base: string;
/** 0777: where a handler that ran says so (`<uid> <status>` lines in `ran`). */
let drop: string;
/** Root's 0755 script: appends `<uid> <args…>` to drop/ran. */
let evil: string;
/** The same, then exits 1: a handler whose delivery is retried. */
let failing: string;

beforeAll(() => {
  alice = localUser("alice");
  mallory = localUser("mallory");
  base = tempDir("li-other-users-");
  fs.chmodSync(base, 0o755);
  drop = path.join(base, "drop");
  fs.mkdirSync(drop);
  fs.chmodSync(drop, 0o777);
  // Made here, writable by everyone: created by a first writer it would be that user's, and others' appends would fail.
  fs.writeFileSync(path.join(drop, "ran"), "");
  fs.chmodSync(path.join(drop, "ran"), 0o666);
  evil = path.join(base, "evil.sh");
  fs.writeFileSync(evil, `#!/bin/sh\necho "$(id -u) $*" >> ${drop}/ran\n`);
  fs.chmodSync(evil, 0o755);
  failing = path.join(base, "failing.sh");
  fs.writeFileSync(failing, `#!/bin/sh\necho "$(id -u) $*" >> ${drop}/ran\nexit 1\n`);
  fs.chmodSync(failing, 0o755);
});

/** A directory `name` under `parent` (default: the shared base), owned by `user`. */
function dirOf(user: LocalUser, name: string, mode = 0o700, parent = base): string {
  const dir = path.join(parent, name);
  fs.mkdirSync(dir, { recursive: true });
  fs.chownSync(dir, user.uid, user.gid);
  fs.chmodSync(dir, mode);
  return dir;
}

function fileOf(user: LocalUser, file: string, text: string, mode = 0o600): string {
  fs.writeFileSync(file, text);
  fs.chownSync(file, user.uid, user.gid);
  fs.chmodSync(file, mode);
  return file;
}

function ran(): string {
  try {
    return fs.readFileSync(path.join(drop, "ran"), "utf8");
  } catch {
    return "";
  }
}

/** LI_HOME (and, on PostgreSQL, that home's ledger) for a user's li. */
const homeEnv = (home: string, extra: Record<string, string> = {}) => ({ LI_HOME: home, ...ledgerEnvFor(home), ...extra });

/** One line on stderr, exit 78, naming the path, its owner and its mode. */
function expectRefused(r: { code: number; stderr: string }, what: string, where: string, owner: LocalUser, mode: string): void {
  expect(r.stderr.trim().split("\n")).toEqual([expect.stringContaining(`${what} ${where} is`)]);
  expect(r.stderr).toContain(`owned by ${owner.name} (uid ${owner.uid}), mode ${mode}`);
  expect(r.code).toBe(78);
}

describeAsUsers("a home, ledger or settings file that is not yours is refused (§18 other users)", () => {
  test("mallory's world-writable home with her standing handler: alice's li agent refuses it, and the handler never runs", async () => {
    const shared = dirOf(mallory, "squatted", 0o700);
    const added = await liAs(mallory, ["events", "handlers", "add", "evil", "--", evil, "{status}"], { env: homeEnv(shared) });
    expect(added.stderr).toContain("handler evil added");
    expect(added.code).toBe(0);
    fs.chmodSync(shared, 0o777);
    if (fs.existsSync(path.join(shared, "state.db"))) fs.chmodSync(path.join(shared, "state.db"), 0o666);
    const r = await liAs(alice, ["agent", "--", "true"], { env: homeEnv(shared) });
    expectRefused(r, "LI_HOME", shared, mallory, "0777");
    expect(ran()).toBe("");
  });

  test("mallory's 0755 home holding a settings handler is refused as another user's", async () => {
    const theirs = dirOf(mallory, "theirs", 0o755);
    fileOf(mallory, path.join(theirs, "settings.yaml"), `notify.on_terminal: "${evil} {status}"\n`, 0o644);
    const r = await liAs(alice, ["agent", "--", "true"], { env: homeEnv(theirs) });
    expectRefused(r, "LI_HOME", theirs, mallory, "0755");
    expect(r.stderr).toContain("another user's");
    expect(ran()).toBe("");
  });

  test("alice's own home made 0777 is refused; so is a ledger file swapped in by mallory", async () => {
    const own = dirOf(alice, "own", 0o700);
    const first = await liAs(alice, ["agent", "--", "true"], { env: homeEnv(own) });
    expect(first.code).toBe(0);
    fs.chmodSync(own, 0o777);
    expectRefused(await liAs(alice, ["ls"], { env: homeEnv(own) }), "LI_HOME", own, alice, "0777");
    fs.chmodSync(own, 0o700);
    const db = path.join(own, "swapped.db");
    fileOf(mallory, db, "", 0o644);
    expectRefused(await liAs(alice, ["agent", "--", "true"], { env: { LI_HOME: own, LI_DB: db } }), "the ledger", db, mallory, "0644");
  });

  test("a runs root elsewhere that mallory owns is refused before the leg starts", async () => {
    const own = dirOf(alice, "own-runs", 0o700);
    const runs = dirOf(mallory, "mallory-runs", 0o755);
    const r = await liAs(alice, ["agent", "--", "true"], { env: homeEnv(own, { LI_RUNS_ROOT: runs }) });
    expectRefused(r, "the runs root", runs, mallory, "0755");
    expect(fs.readdirSync(runs)).toEqual([]);
  });

  test("a global settings.yaml of another owner in alice's home is refused", async () => {
    const own = dirOf(alice, "own-settings", 0o700);
    const settings = fileOf(mallory, path.join(own, "settings.yaml"), `notify.on_terminal: "${evil} {status}"\n`, 0o644);
    const r = await liAs(alice, ["agent", "--", "true"], { env: homeEnv(own) });
    expectRefused(r, "the settings file", settings, mallory, "0644");
    expect(ran()).toBe("");
  });

  test("a root-owned system home (0755) is accepted: alice may read it", async () => {
    const system = path.join(base, "system-home");
    fs.mkdirSync(system, { mode: 0o755 });
    fs.chmodSync(system, 0o755);
    const r = await liAs(alice, ["ls", "--json"], { env: homeEnv(system) });
    expect(r.stderr).not.toContain("another user's");
    expect(r.code).not.toBe(78);
  });
});

describeAsUsers("a planted .li/settings.yaml above the project is not read (§18 other users)", () => {
  test("mallory's /tmp/.li neither times alice's leg out, silences her handler nor prunes her ledger", async () => {
    // top stands for /tmp: root's, sticky, world-writable; mallory plants top/.li/settings.yaml.
    const top = path.join(base, "tmp-like");
    fs.mkdirSync(top);
    fs.chmodSync(top, 0o1777);
    const planted = dirOf(mallory, ".li", 0o755, top);
    fileOf(mallory, path.join(planted, "settings.yaml"), "agent.timeout: 1s\nwatch.prune_keep_days: 0.00001\nnotify:\n  on_terminal: {enabled: false}\n", 0o644);
    const work = dirOf(alice, "work", 0o700, dirOf(alice, "x", 0o700, top));
    const home = dirOf(alice, "home-planted", 0o700);
    fileOf(alice, path.join(home, "settings.yaml"), `notify.on_terminal: "${evil} planted {status}"\n`);
    const r = await liAs(alice, ["agent", "--json", "--", "sleep", "2"], { cwd: work, env: homeEnv(home) });
    expect(r.stderr).toContain(`settings ${planted}/settings.yaml: not read: the settings directory ${planted} is another user's (owned by ${mallory.name}`);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).status).toBe("completed");
    expect(ran()).toContain(`${alice.uid} planted completed`);
    const watched = await liAs(alice, ["watch", "--once"], { cwd: work, env: homeEnv(home) });
    expect(watched.code).toBe(0);
    const listed = await liAs(alice, ["ls", "--json"], { cwd: work, env: homeEnv(home) });
    expect(JSON.parse(listed.stdout).entities).toHaveLength(1);
  });
});

describeAsUsers("no credential in a process's argv (§18 other users)", () => {
  // Today: the detached supervisor copied its parent's argv, so `ps` showed every local user the ledger's
  // password and the --notify template's token for the leg's whole life.
  test("mallory's ps shows alice's detached supervisor without the ledger's password or the --notify token", async () => {
    const home = dirOf(alice, "home-detach", 0o700);
    const ledger = ledgerEnvFor(home).LI_DB;
    // On PostgreSQL a password in the URL (the test server trusts loopback, so any password connects); on SQLite the path.
    const db = ledger === undefined ? path.join(home, "state.db") : Object.assign(new URL(ledger), { password: "pw-in-url-51c9" }).toString();
    const started = await liAs(alice, ["agent", "--detach", "--json", "--db", db, "--notify", "true 'Authorization: Bearer tok-secret-e4d2'", "--", "sleep", "300"], { env: { LI_HOME: home } });
    expect(started.code).toBe(0);
    const { session_id } = JSON.parse(started.stdout);
    try {
      const alicesLines = (ps: string) => ps.split("\n").filter((line) => line.startsWith(`${alice.name} `));
      // Setup is committed when --detach returns; the command starts a moment later.
      const ps = await until("alice's command in mallory's ps", async () => {
        const seen = await liAsProgram(mallory, ["/usr/bin/ps", "-eo", "user:32,args"]);
        return alicesLines(seen).some((line) => line.includes("sleep 300")) ? seen : null;
      });
      expect(alicesLines(ps).some((line) => line.trimEnd().endsWith(" agent"))).toBe(true);
      expect(ps).not.toContain("tok-secret-e4d2");
      expect(ps).not.toContain("pw-in-url-51c9");
    } finally {
      const killed = await liAs(alice, ["kill", "--db", db, session_id], { env: { LI_HOME: home } });
      expect(killed.code).toBe(0);
    }
  });
});

/** A program's stdout as `user` (exit 0 expected). */
async function liAsProgram(user: LocalUser, argv: string[]): Promise<string> {
  const proc = spawnAsUser(user, argv);
  const [stdout, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
  expect(code).toBe(0);
  return stdout;
}

describeAsUsers("on a shared ledger another user's handler never runs as you (§18 other users)", () => {
  // Today: mallory's standing handler ran on alice's legs as alice, with alice's environment, and alice's
  // li watch retried mallory's failing --notify as alice.
  test("mallory's standing handler and her failing --notify: alice's push and li watch run neither; mallory's own li does", async () => {
    const aliceHome = dirOf(alice, "home-shared-alice", 0o700);
    const malloryHome = dirOf(mallory, "home-shared-mallory", 0o700);
    const shared = homeEnv(aliceHome);
    const db = ledgerRows(aliceHome);
    const sharedDb = ledgerEnvFor(aliceHome).LI_DB;
    const asMallory = { LI_HOME: malloryHome, ...(sharedDb === undefined ? {} : { LI_DB: sharedDb }) };
    if (onPostgres) {
      // One PostgreSQL ledger, each user with a home of their own: mallory registers through li as herself.
      const added = await liAs(mallory, ["events", "handlers", "add", "evil", "--", evil, "shared-standing", "{status}"], { env: asMallory });
      expect(added.code).toBe(0);
      const leg = await liAs(mallory, ["agent", "--notify", `${failing} shared-notify {status}`, "--", "true"], { env: asMallory });
      expect(leg.code).toBe(0);
    } else {
      // A SQLite ledger is one user's file (another's is refused), so mallory's row is put there as she would have.
      expect((await liAs(alice, ["events", "consumers", "add", "warm-up"], { env: shared })).code).toBe(0);
      const seq = (await db.get<{ m: number }>("SELECT COALESCE(MAX(seq), 0) AS m FROM status_transitions"))!.m;
      await db.runAll([
        ["INSERT INTO consumers (name, watermark, registered_at, retired_at) VALUES ('handler:evil', ?, 0, NULL)", seq],
        [
          "INSERT INTO terminal_callbacks (id, scope, name, consumer, session_id, leg_id, argv, filter_kinds, filter_ids, origin, host_id, uid, enabled, created_at, retired_at) VALUES ('cb-mallory', 'standing', 'evil', 'handler:evil', NULL, NULL, ?, NULL, NULL, 'li events handlers add', ?, ?, 1, 0, NULL)",
          JSON.stringify([evil, "shared-standing", "{status}"]),
          handlerHost(),
          mallory.uid,
        ],
      ]);
    }
    const before = ran();
    const leg = await liAs(alice, ["agent", "--", "true"], { env: shared });
    expect(leg.code).toBe(0);
    // Every retry due now, so alice's watcher would take them if it took other users' handlers at all.
    await db.run("UPDATE terminal_deliveries SET next_attempt_at = 0 WHERE state = 'pending' OR next_attempt_at IS NOT NULL");
    const watched = await liAs(alice, ["watch", "--once"], { env: shared });
    expect(watched.code).toBe(0);
    const alicesRuns = ran()
      .slice(before.length)
      .split("\n")
      .filter((line) => line.startsWith(`${alice.uid} `));
    expect(alicesRuns).toEqual([]);
    // Mallory's own delivery pass runs her standing handler on alice's leg's end, as mallory.
    if (onPostgres) {
      const delivered = await liAs(mallory, ["events", "deliver"], { env: asMallory });
      expect(delivered.code).toBe(0);
      expect(ran()).toContain(`${mallory.uid} shared-standing completed`);
    }
    // Alice's listing names mallory's handler and its owner, not its command.
    const listed = JSON.parse((await liAs(alice, ["events", "handlers", "ls", "--json"], { env: shared })).stdout);
    expect(listed).toEqual([expect.objectContaining({ name: "evil", argv: null, uid: mallory.uid, yours: false })]);
    const owners = await db.all<{ consumer: string; uid: number | null }>("SELECT consumer, uid FROM terminal_callbacks ORDER BY created_at");
    expect(owners.every((row) => row.uid === mallory.uid)).toBe(true);
    await db.close();
  });

  // Today: alice's li events handlers rm retired mallory's handler, silencing her notices.
  test("alice cannot remove mallory's standing handler; mallory can", async () => {
    const aliceHome = dirOf(alice, "home-rm-alice", 0o700);
    const malloryHome = dirOf(mallory, "home-rm-mallory", 0o700);
    const shared = homeEnv(aliceHome);
    const db = ledgerRows(aliceHome);
    const sharedDb = ledgerEnvFor(aliceHome).LI_DB;
    const asMallory = { LI_HOME: malloryHome, ...(sharedDb === undefined ? {} : { LI_DB: sharedDb }) };
    if (onPostgres) {
      expect((await liAs(mallory, ["events", "handlers", "add", "kept", "--", evil, "kept", "{status}"], { env: asMallory })).code).toBe(0);
    } else {
      // A SQLite ledger is one user's file: mallory's row is put there as a shared ledger would hold it.
      expect((await liAs(alice, ["events", "consumers", "add", "warm-up"], { env: shared })).code).toBe(0);
      await db.runAll([
        ["INSERT INTO consumers (name, watermark, registered_at, retired_at) VALUES ('handler:kept', 0, 0, NULL)"],
        [
          "INSERT INTO terminal_callbacks (id, scope, name, consumer, session_id, leg_id, argv, filter_kinds, filter_ids, origin, host_id, uid, enabled, created_at, retired_at) VALUES ('cb-kept', 'standing', 'kept', 'handler:kept', NULL, NULL, ?, NULL, NULL, 'li events handlers add', ?, ?, 1, 0, NULL)",
          JSON.stringify([evil, "kept", "{status}"]),
          handlerHost(),
          mallory.uid,
        ],
      ]);
    }
    const retired = () => db.get<{ c: number | null; k: number | null }>("SELECT (SELECT retired_at FROM terminal_callbacks WHERE consumer = 'handler:kept') AS c, (SELECT retired_at FROM consumers WHERE name = 'handler:kept') AS k");
    const refused = await liAs(alice, ["events", "handlers", "rm", "kept"], { env: shared });
    expect(refused.stderr.trim().split("\n")).toEqual([`li: handler 'kept' belongs to uid ${mallory.uid} (the uid that added it): only its owner (or root) can remove it`]);
    expect(refused.code).toBe(2);
    expect(await retired()).toEqual({ c: null, k: null });
    if (onPostgres) {
      const removed = await liAs(mallory, ["events", "handlers", "rm", "kept"], { env: asMallory });
      expect(removed.code).toBe(0);
      expect((await retired())!.c).not.toBeNull();
    }
    await db.close();
  });
});

describeAsUsers("what a shared ledger shows another user (§18 other users)", () => {
  // Today: li logs said alice's run directory "is gone" when mallory could not read it, and li show
  // printed alice's --notify template, token included, to every user of the ledger.
  test("mallory's li logs says alice's run directory is not readable by her, and li show hides alice's handler command", async () => {
    const aliceHome = dirOf(alice, "home-shows-alice", 0o700);
    const malloryHome = dirOf(mallory, "home-shows-mallory", 0o700);
    const leg = await liAs(alice, ["agent", "--json", "--notify", "true 'Authorization: Bearer tok-show-3b9e'", "--", "echo", "hello"], { env: homeEnv(aliceHome) });
    expect(leg.code).toBe(0);
    const { session_id } = JSON.parse(leg.stdout);
    const sharedDb = ledgerEnvFor(aliceHome).LI_DB;
    let asMallory: Record<string, string>;
    if (sharedDb !== undefined) asMallory = { LI_HOME: malloryHome, LI_DB: sharedDb };
    else {
      // A SQLite ledger is one user's file: mallory reads a copy of alice's, as a shared ledger would show it.
      const copy = fileOf(mallory, path.join(malloryHome, "state.db"), "", 0o600);
      fs.copyFileSync(path.join(aliceHome, "state.db"), copy);
      asMallory = { LI_HOME: malloryHome };
    }
    const logs = await liAs(mallory, ["logs", session_id], { env: asMallory });
    expect(logs.stderr).toContain("is not readable by you");
    expect(logs.stderr).not.toContain("is gone");
    expect(logs.code).toBe(1);
    const shown = await liAs(mallory, ["show", session_id], { env: asMallory });
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain(`(another user's handler, uid ${alice.uid}: its command is not shown)`);
    expect(shown.stdout).not.toContain("tok-show-3b9e");
    const json = JSON.parse((await liAs(mallory, ["show", "--json", session_id], { env: asMallory })).stdout);
    expect(json.callbacks).toEqual([expect.objectContaining({ argv: null, argv_hidden: true, uid: alice.uid })]);
    // Alice still sees her own.
    const own = await liAs(alice, ["show", session_id], { env: homeEnv(aliceHome) });
    expect(own.stdout).toContain("tok-show-3b9e");
  });
});
