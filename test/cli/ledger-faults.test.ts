// A ledger li cannot use (someone else's SQLite file, an empty file, a read-only file) is exit 78 with
// one line naming the path and the reason, never exit 70, and the file is left exactly as it was (§16, §18).

import { Database } from "bun:sqlite";
import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, chownSync, copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { LI_BINARY, li, liEnv, type LiResult } from "../helpers/cli.ts";
import { tempDir } from "../helpers/ledger.ts";
import { describeSqliteOnly, testSqliteOnly } from "../helpers/backends.ts";

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

function home(): string {
  const dir = tempDir("li-faults-");
  dirs.push(dir);
  return dir;
}

const bytes = (path: string) => Buffer.from(readFileSync(path)).toString("base64");

/** Exit 78, and stderr is one line naming the ledger and saying why. */
function expectRefused(r: LiResult, path: string, why: RegExp): void {
  expect({ code: r.code, stdout: r.stdout }).toEqual({ code: 78, stdout: "" });
  const lines = r.stderr.trimEnd().split("\n");
  expect(lines).toHaveLength(1);
  expect(lines[0]).toContain(path);
  expect(lines[0]).toMatch(why);
  expect(r.stderr).not.toContain("internal error");
}

/** A SQLite file that is not li's: a table of its own, `user_version` as li's current schema would have. */
function foreignLedger(dir: string, userVersion: number): string {
  const path = join(dir, "state.db");
  const db = new Database(path);
  db.run("CREATE TABLE notes (body TEXT)");
  db.run("INSERT INTO notes VALUES ('mine')");
  db.run(`PRAGMA user_version = ${userVersion}`);
  db.close();
  return path;
}

describeSqliteOnly("ledger-file")("someone else's SQLite file", () => {
  test("every command refuses it with 78 naming the file; nothing is written into it", async () => {
    const dir = home();
    const path = foreignLedger(dir, 1);
    const before = bytes(path);
    for (const args of [["ls"], ["show", "abc"], ["wait", "abc"], ["state", "transitions", "abc"], ["state", "create", "play"], ["state", "doctor"], ["watch", "--once"], ["kill", "abc"]]) {
      const r = await li(args, { home: dir });
      expectRefused(r, path, /not a li ledger/);
    }
    expect(bytes(path)).toBe(before);
  });

  test("with user_version 0 li does not add its tables to it: a foreground leg warns and its command still runs", async () => {
    const dir = home();
    const path = foreignLedger(dir, 0);
    const before = bytes(path);
    const r = await li(["agent", "--", "sh", "-c", "echo RAN"], { home: dir });
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("RAN\n");
    expect(r.stderr).toContain(`ledger ${path}: not a li ledger`);
    expect(r.stderr).toContain("(not recorded)");
    expect(bytes(path)).toBe(before);
    const detached = await li(["agent", "--detach", "--", "true"], { home: dir });
    expect(detached.code).toBe(78);
    expect(detached.stderr).toContain("not a li ledger");
    expect(bytes(path)).toBe(before);
  });
});

testSqliteOnly("ledger-file")("a zero-length state.db is refused with 78 by every command that does not create ledgers, and stays zero-length", async () => {
  const dir = home();
  const path = join(dir, "state.db");
  writeFileSync(path, "");
  const commands = [["ls"], ["wait", "abc"], ["show", "abc"], ["state", "transitions", "abc"], ["events", "owed", "--consumer", "ci"], ["events", "handlers", "ls"], ["kill", "abc"], ["state", "doctor", "--dry-run"]];
  for (const args of commands) expectRefused(await li(args, { home: dir }), path, /empty file, not a li ledger yet/);
  expect(readFileSync(path).length).toBe(0);
  // A command that records turns it into a ledger, as it would create a missing one.
  const created = await li(["state", "create", "play"], { home: dir });
  expect(created.code).toBe(0);
  expect((await li(["ls"], { home: dir })).code).toBe(0);
});

/**
 * Runs li as a user who may read the ledger but not write it. As root (who ignores file modes) that is
 * another uid, through setpriv, on a file that uid owns with mode 0400; otherwise the file's mode alone.
 */
async function liReadOnly(args: string[], dir: string): Promise<LiResult> {
  if (process.getuid?.() !== 0) return li(args, { home: dir });
  const proc = Bun.spawn(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", join(dir, "li"), ...args], {
    cwd: dir,
    env: liEnv(join(dir, "home")),
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr };
}

describeSqliteOnly("ledger-file")("a read-only ledger", () => {
  test("writing commands exit 78 naming the file and 'read-only'; readers still read; the file is unchanged", async () => {
    const dir = home();
    const liHome = join(dir, "home");
    mkdirSync(liHome);
    const made = await li(["agent", "--", "true"], { home: liHome });
    expect(made.code).toBe(0);
    const path = join(liHome, "state.db");
    // The last connection checkpointed and removed the WAL: state.db alone holds the ledger.
    if (process.getuid?.() === 0) {
      // Another uid must be able to reach the binary and the directory, and own the file it cannot write.
      copyFileSync(LI_BINARY, join(dir, "li"));
      chmodSync(join(dir, "li"), 0o755);
      chmodSync(dir, 0o755);
      for (const p of [liHome, path]) chownSync(p, 65534, 65534);
      chownSync(join(liHome, "runs"), 65534, 65534);
    }
    chmodSync(path, 0o400);
    const before = bytes(path);

    const listed = await liReadOnly(["ls"], dir);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain("completed");
    const created = await liReadOnly(["state", "create", "play"], dir);
    expectRefused(created, path, /: read-only: .*SQLITE_READONLY/);
    // The watcher logs on stdout (one line per action), and a pass with errors is not a success for cron.
    const watched = await liReadOnly(["watch", "--once"], dir);
    expect(watched.code).toBe(78);
    expect(watched.stdout).toMatch(new RegExp(`error during=\\S+ message="ledger ${path}: read-only`));
    expect(watched.stdout).toMatch(/ stop ended=once .* errors=[1-9]/);
    const leg = await liReadOnly(["agent", "--", "sh", "-c", "echo RAN"], dir);
    expect(leg.code).toBe(0);
    expect(leg.stdout).toBe("RAN\n");
    expect(leg.stderr).toContain(`ledger ${path}: read-only`);
    expect(leg.stderr).toContain("(not recorded)");
    expect(bytes(path)).toBe(before);
  });
});

describeSqliteOnly("ledger-file")("a ledger on a read-only mount", () => {
  test("readers and writers exit 78 saying why SQLite could not open it; a foreground leg still runs its command", async () => {
    if (process.getuid?.() !== 0) {
      if (process.env.CI === "true") throw new Error("this test needs root to mount a tmpfs read-only");
      console.error("*** a ledger on a read-only mount: NOT RUN (needs root) ***");
      return;
    }
    const mountPoint = home();
    expect(Bun.spawnSync(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", mountPoint]).exitCode).toBe(0);
    try {
      const liHome = join(mountPoint, "home");
      expect((await li(["agent", "--", "true"], { home: liHome })).code).toBe(0);
      expect(Bun.spawnSync(["mount", "-o", "remount,ro", mountPoint]).exitCode).toBe(0);
      const path = join(liHome, "state.db");
      const why = /cannot be opened: its directory \S+ is not writable \(EROFS\)/;
      expectRefused(await li(["ls"], { home: liHome }), path, why);
      expectRefused(await li(["state", "create", "play"], { home: liHome }), path, why);
      const leg = await li(["agent", "--", "sh", "-c", "echo RAN"], { home: liHome });
      expect(leg.code).toBe(0);
      expect(leg.stdout).toBe("RAN\n");
      expect(leg.stderr).toMatch(why);
      // Its run directory cannot even be made (mkdir: EROFS): the command runs all the same.
      expect(leg.stderr).toMatch(/warning: cannot write the run directory \S+ \(EROFS/);
      expect(leg.stderr).toContain("(not recorded)");
    } finally {
      Bun.spawnSync(["umount", mountPoint]);
    }
  });
});

describeSqliteOnly("ledger-file")("a damaged file", () => {
  test("bytes that are not SQLite at all: 78 naming the file, for readers and writers; a foreground leg still runs", async () => {
    const dir = home();
    const path = join(dir, "state.db");
    writeFileSync(path, Buffer.alloc(8192, 0x5a));
    for (const args of [["ls"], ["state", "create", "play"]]) expectRefused(await li(args, { home: dir }), path, /not a SQLite database: .*SQLITE_NOTADB/);
    const leg = await li(["agent", "--", "true"], { home: dir });
    expect(leg.code).toBe(0);
    expect(leg.stderr).toContain("SQLITE_NOTADB");
  });

  test("a li ledger whose pages were overwritten: 78 'corrupt', never 'internal error'", async () => {
    const dir = home();
    expect((await li(["agent", "--", "true"], { home: dir })).code).toBe(0);
    const path = join(dir, "state.db");
    const image = readFileSync(path);
    // Every page after the first three (the schema and the first tables) gets garbage over its header.
    for (let page = 3; page * 4096 < image.length; page++) image.fill(0x5a, page * 4096, page * 4096 + 200);
    writeFileSync(path, image);
    for (const args of [["ls"], ["show", "abc"], ["state", "create", "play"]]) expectRefused(await li(args, { home: dir }), path, /corrupt.*SQLITE_CORRUPT/);
  });
});
