import { beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { chmodSync, mkdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { commandPaths } from "../../src/cli/main.ts";
import { li, LI_BINARY, liEnv } from "../helpers/cli.ts";
import { describeSqliteOnly, testSqliteOnly } from "../helpers/backends.ts";
import { tempDir } from "../helpers/ledger.ts";
import { ledgerRows } from "../helpers/ledger-rows.ts";

let cwd: string;
let home: string;
const run = (args: string[], extra: { env?: Record<string, string | undefined>; stdin?: string } = {}) => li(args, { home, cwd, ...extra });

beforeAll(() => {
  const root = tempDir("li-cli-");
  cwd = join(root, "empty");
  mkdirSync(cwd);
  home = join(root, "home");
});

describe("the compiled binary, from an empty directory", () => {
  test("--version and --help", async () => {
    const version = await run(["--version"]);
    expect(version.code).toBe(0);
    expect(version.stdout).toMatch(/^li \d+\.\d+\.\d+ \(commit ([0-9a-f]{12}(-dirty)?|unknown), linux-(x64|arm64)\)\n$/);
    const help = await run(["--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("state");
    for (const command of commandPaths()) {
      const r = await run([...command, "--help"]);
      expect({ command, code: r.code, usage: r.stdout.includes("USAGE"), listed: help.stdout.includes(command[0]!) }).toEqual({ command, code: 0, usage: true, listed: true });
    }
    expect(commandPaths().length).toBeGreaterThanOrEqual(13);
  });

  test("create, set-status, show and transitions work end to end", async () => {
    const created = await run(["state", "create", "play"]);
    expect(created.code).toBe(0);
    const id = created.stdout.trim();
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);

    expect((await run(["state", "set-status", "play", id.slice(0, 8), "--status", "running", "--reason", "play.running.started"])).code).toBe(0);
    expect((await run(["state", "set-status", "play", id, "--status", "merged", "--reason", "play.merged.ok", "--summary", "shipped"])).code).toBe(0);

    const shown = await run(["show", id, "--json"]);
    expect(shown.code).toBe(0);
    const record = JSON.parse(shown.stdout);
    expect(record.kind).toBe("play");
    expect(record.entity.status).toBe("merged");
    expect(record.entity.status_reason_summary).toBe("shipped");
    expect(record.transitions.map((t: { status: string }) => t.status)).toEqual(["pending", "running", "merged"]);

    const history = await run(["state", "transitions", id, "--json"]);
    expect(JSON.parse(history.stdout).transitions.map((t: { previous_status: string | null }) => t.previous_status)).toEqual([null, "pending", "running"]);
    const human = await run(["state", "transitions", id]);
    expect(human.stdout).toContain("play.merged.ok");
  });

  testSqliteOnly("ledger-file")("the home and the database file li created are owner-only", () => {
    expect(statSync(home).mode & 0o777).toBe(0o700);
    expect(statSync(join(home, "state.db")).mode & 0o777).toBe(0o600);
  });

  test("set-status exits 1 on a guard conflict and on a policy refusal, saying which", async () => {
    const id = (await run(["state", "create", "invocation"])).stdout.trim();
    const conflict = await run(["state", "set-status", "invocation", id, "--status", "failed", "--reason", "run.failed.exception", "--expect", "completed"]);
    expect(conflict.code).toBe(1);
    expect(conflict.stderr).toContain("not applied");
    expect((await run(["state", "set-status", "invocation", id, "--status", "completed", "--reason", "run.completed.ok"])).code).toBe(0);
    const refused = await run(["state", "set-status", "invocation", id, "--status", "running", "--reason", "run.started.ok"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("terminal status 'completed'");
    const repaired = await run(["state", "set-status", "invocation", id, "--status", "failed", "--reason", "run.failed.exception", "--override", "--actor", "ops", "--why", "it failed"]);
    expect(repaired.code).toBe(0);
  });

  test("create --json prints the row, and --id takes a validated external id", async () => {
    const r = await run(["state", "create", "schedule_run", "--id", "nightly:2026-11-29", "--status", "running", "--invocation", "inv-1", "--json"]);
    expect(r.code).toBe(0);
    const row = JSON.parse(r.stdout);
    expect([row.kind, row.id, row.status, row.invocation_id, row.status_reason_code]).toEqual(["schedule_run", "nightly:2026-11-29", "running", "inv-1", "schedule.fired.due"]);
  });

  test("li reasons lists the vocabulary, as text and JSON", async () => {
    const r = await run(["reasons", "--json"]);
    const codes = JSON.parse(r.stdout).map((x: { code: string }) => x.code);
    expect(codes).toContain("session.reopened.by_resume");
    expect((await run(["reasons"])).stdout).toContain("run.completed_empty.no_evidence");
  });
});

describe("bad input: one line, exit 2, the ledger unchanged", () => {
  const cases: [string, string[]][] = [
    ["an unknown command", ["frobnicate"]],
    ["an unknown subcommand", ["state", "frobnicate"]],
    ["an unknown flag", ["state", "create", "play", "--colour"]],
    ["an unknown flag after the kind", ["show", "x", "--verbose"]],
    ["an unknown kind", ["state", "create", "widget"]],
    ["a kind li does not create", ["state", "create", "session"]],
    ["a missing kind", ["state", "create"]],
    ["an unsafe id", ["state", "create", "team", "--id", "../etc"]],
    ["a status outside the initial set", ["state", "create", "play", "--status", "merged"]],
    ["an unknown reason", ["state", "create", "play", "--reason", "play.pending.bogus"]],
    ["a flag for another kind", ["state", "create", "team", "--session", "s1"]],
    ["a flag missing its value", ["state", "create", "team", "--id"]],
    ["set-status without --status", ["state", "set-status", "team", "TEAMID", "--reason", "team.archived.operator"]],
    ["set-status with an unknown status", ["state", "set-status", "team", "TEAMID", "--status", "gone", "--reason", "team.archived.operator"]],
    ["set-status with a reason of another domain", ["state", "set-status", "team", "TEAMID", "--status", "archived", "--reason", "run.completed.ok"]],
    ["set-status --override without --why", ["state", "set-status", "team", "TEAMID", "--status", "archived", "--reason", "team.archived.operator", "--override", "--actor", "a"]],
    ["set-status on a missing id", ["state", "set-status", "team", "nope-nope", "--status", "archived", "--reason", "team.archived.operator"]],
    ["set-status with an unknown kind", ["state", "set-status", "widget", "TEAMID", "--status", "archived", "--reason", "team.archived.operator"]],
    ["show of a missing id", ["show", "no-such-entity"]],
    ["transitions of a missing id", ["state", "transitions", "no-such-entity"]],
    ["an empty --db", ["--db", "", "show", "x"]],
    ["a command after -- where none is taken", ["state", "create", "team", "--", "echo", "hi"]],
    ["--help after -- is not li's own", ["show", "--", "--help"]],
  ];
  let teamId: string;
  beforeAll(async () => {
    teamId = (await run(["state", "create", "team"])).stdout.trim();
  });
  for (const [name, args] of cases) {
    test(name, async () => {
      const before = await ledgerRows(home).dump();
      const r = await run(args.map((a) => (a === "TEAMID" ? teamId : a)));
      expect(r.code).toBe(2);
      expect(r.stdout).toBe("");
      expect(r.stderr.trim().split("\n")).toHaveLength(1);
      expect(r.stderr).toStartWith("li: ");
      expect(r.stderr).not.toContain("    at ");
      expect(await ledgerRows(home).dump()).toEqual(before);
    });
  }
});

describe("every command", () => {
  test("refuses an unknown flag with one line naming it, exit 2, and writes nothing", async () => {
    for (const command of commandPaths()) {
      const before = await ledgerRows(home).dump();
      const r = await run([...command, "--no-such-flag"]);
      expect({ command, code: r.code, lines: r.stderr.trim().split("\n").length, names: r.stderr.includes("--no-such-flag"), stdout: r.stdout }).toEqual({ command, code: 2, lines: 1, names: true, stdout: "" });
      expect(await ledgerRows(home).dump()).toEqual(before);
    }
  });
});

describe("many processes at once", () => {
  test("8 compiled binaries opening one fresh ledger at the same moment all succeed", async () => {
    const fresh = join(tempDir(), "home");
    const procs = Array.from({ length: 8 }, (_, i) =>
      Bun.spawn([LI_BINARY, "state", "create", "team", "--id", `team-${i}`], { cwd, env: liEnv(fresh), stdout: "pipe", stderr: "pipe" }),
    );
    const results = await Promise.all(procs.map(async (p) => ({ code: await p.exited, stderr: await new Response(p.stderr).text() })));
    expect(results).toEqual(Array(8).fill({ code: 0, stderr: "" }));
    expect(await ledgerRows(fresh).get("SELECT COUNT(*) AS n FROM teams")).toEqual({ n: 8 });
  });
});

describe("no ledger yet", () => {
  test("a read-only command with no ledger yet: exit 2, and no ledger is created", async () => {
    const fresh = join(tempDir(), "home");
    const r = await li(["show", "abc"], { home: fresh, cwd });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("nothing recorded yet");
    expect(await ledgerRows(fresh).exists()).toBe(false);
  });
});

describeSqliteOnly("ledger-file")("ledgers li cannot use (§16)", () => {
  test("a ledger written by a newer li: exit 78 naming the path", async () => {
    const h = join(tempDir(), "home");
    expect((await li(["state", "create", "team"], { home: h, cwd })).code).toBe(0);
    const db = new Database(join(h, "state.db"));
    db.run("PRAGMA user_version = 999");
    db.close();
    const r = await li(["state", "create", "team"], { home: h, cwd });
    expect(r.code).toBe(78);
    expect(r.stderr).toContain(join(h, "state.db"));
    expect(r.stderr).toContain("newer li");
  });

  test("a file that is not a database: exit 78 naming the path", async () => {
    const dir = tempDir();
    const path = join(dir, "junk.db");
    writeFileSync(path, "this is not sqlite, not even close ".repeat(200));
    const r = await li(["--db", path, "state", "create", "team"], { home: join(dir, "home"), cwd });
    expect(r.code).toBe(78);
    expect(r.stderr).toContain(path);
  });

  test("a database in a directory li cannot write: exit 78 naming the path", async () => {
    if (process.getuid?.() === 0) {
      // root ignores permissions; use a path under a regular file instead.
      const dir = tempDir();
      writeFileSync(join(dir, "file"), "");
      const r = await li(["--db", join(dir, "file", "state.db"), "state", "create", "team"], { home: join(dir, "home"), cwd });
      expect(r.code).toBe(78);
      expect(r.stderr).toContain(join(dir, "file", "state.db"));
      return;
    }
    const dir = tempDir();
    chmodSync(dir, 0o500);
    const r = await li(["--db", join(dir, "state.db"), "state", "create", "team"], { home: join(dir, "home"), cwd });
    expect(r.code).toBe(78);
  });

  test("LI_DB and --db choose the ledger, --db winning", async () => {
    const dir = tempDir();
    const a = join(dir, "a.db");
    const b = join(dir, "b.db");
    expect((await li(["state", "create", "team", "--id", "in-a"], { home: join(dir, "home"), cwd, env: { LI_DB: a } })).code).toBe(0);
    expect((await li(["--db", b, "state", "create", "team", "--id", "in-b"], { home: join(dir, "home"), cwd, env: { LI_DB: a } })).code).toBe(0);
    expect((await li(["show", "in-b"], { home: join(dir, "home"), cwd, env: { LI_DB: b } })).code).toBe(0);
    expect((await li(["show", "in-b"], { home: join(dir, "home"), cwd, env: { LI_DB: a } })).code).toBe(2);
  });
});
