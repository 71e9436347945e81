// The disk-full matrix (issue 10, §16–§18) on a real 2 MiB tmpfs: full before setup, during the
// command's output, and at teardown. Each case asserts the command's exit code, li's exit code and
// message, and the ledger: integrity check ok, every status equal to its newest history row, no orphan
// legs. The disk is filled precisely (a filler file sized from statfs, or written until ENOSPC), never
// by timing; the ledger and the run directories are put on different disks to isolate each case.

import { Database } from "bun:sqlite";
import { afterAll, beforeAll, expect, test } from "bun:test";
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, statfsSync, writeSync } from "node:fs";
import { join } from "node:path";
import { LI_BINARY, li, liEnv, type LiResult } from "../helpers/cli.ts";
import { describeSqliteOnly } from "../helpers/backends.ts";
import { tempDir } from "../helpers/ledger.ts";
import { ledgerRows } from "../helpers/ledger-rows.ts";
import { RECORD, recorded } from "../notify/helpers.ts";


let mountPoint: string | null = null;
const scratch: string[] = [];

/** Why this file cannot run here, or null. Under CI it must run: not being able to is a failure. */
function mountTmpfs(): string | null {
  if (process.getuid?.() !== 0) return "mounting a tmpfs needs root";
  const dir = tempDir("li-diskfull-");
  const mount = Bun.spawnSync(["mount", "-t", "tmpfs", "-o", "size=2m,mode=0700", "tmpfs", dir]);
  if (mount.exitCode !== 0) return `mount -t tmpfs failed: ${mount.stderr.toString().trim()}`;
  mountPoint = dir;
  return null;
}

let cannotRun: string | null = null;
beforeAll(() => {
  cannotRun = mountTmpfs();
  if (cannotRun && process.env.CI !== "true") {
    console.error(`\n*** the disk-full matrix DID NOT RUN: ${cannotRun} (under CI=true this is a failure) ***\n`);
  }
});
afterAll(() => {
  if (mountPoint) {
    Bun.spawnSync(["umount", mountPoint]);
    rmSync(mountPoint, { recursive: true, force: true });
  }
  scratch.forEach((d) => rmSync(d, { recursive: true, force: true }));
});

/** The tmpfs, emptied, or null when the matrix cannot run here (failing under CI). */
function disk(): string | null {
  if (cannotRun) {
    if (process.env.CI === "true") throw new Error(`the disk-full matrix cannot run: ${cannotRun}`);
    return null;
  }
  for (const entry of readdirSync(mountPoint!)) rmSync(join(mountPoint!, entry), { recursive: true, force: true });
  return mountPoint;
}

function elsewhere(): string {
  const dir = tempDir("li-diskfull-other-");
  scratch.push(dir);
  return dir;
}

/** Fills `dir`'s filesystem so that exactly `leaveBytes` (rounded down to blocks) stay free. */
function fillLeaving(dir: string, leaveBytes: number): string {
  const { bavail, bsize } = statfsSync(dir);
  const filler = join(dir, "filler");
  const fd = openSync(filler, "w");
  try {
    const block = Buffer.alloc(bsize, 1);
    const blocks = Math.max(0, Number(bavail) - Math.ceil(leaveBytes / bsize));
    for (let i = 0; i < blocks; i++) writeSync(fd, block);
  } finally {
    closeSync(fd);
  }
  return filler;
}

/** The ledger after the fact: SQLite's integrity check, §5's history invariants, legs that belong somewhere. */
async function expectLedgerSound(dbPath: string): Promise<void> {
  const db = new Database(dbPath, { readonly: true });
  try {
    expect(db.query<{ integrity_check: string }, []>("PRAGMA integrity_check").all().map((r) => r.integrity_check)).toEqual(["ok"]);
  } finally {
    db.close();
  }
  const rows = ledgerRows(join(dbPath, ".."), { sqlitePath: dbPath });
  expect(await rows.orphanLegs()).toEqual([]);
  expect(await rows.historyProblems()).toEqual([]);
  await rows.close();
}

function sessions(dbPath: string): { id: string; status: string; exit_code: number | null }[] {
  const db = new Database(dbPath, { readonly: true });
  try {
    return db.query<{ id: string; status: string; exit_code: number | null }, []>("SELECT id, status, exit_code FROM sessions ORDER BY started_at").all();
  } finally {
    db.close();
  }
}

/** The stream file of the one leg under `runs` (it stays for the record whatever the ledger did). */
function onlyStreamText(runs: string): string {
  const [runDir] = readdirSync(runs);
  const streamDir = join(runs, runDir!, "stream");
  return readFileSync(join(streamDir, readdirSync(streamDir)[0]!), "utf8");
}

const lines = (r: LiResult) => r.stderr.trimEnd().split("\n");

describeSqliteOnly("disk-full")("disk full before setup (the ledger and the run directories on the full disk)", () => {
  test("a foreground leg warns, still runs its command, exits by its outcome, fires --notify once undurable (its spool is on the full disk too), and leaves no empty run directory", async () => {
    const tmpfs = disk();
    if (!tmpfs) return;
    const home = join(tmpfs, "home");
    // A ledger that already holds one leg, so there is something to keep intact.
    const first = await li(["agent", "--", "true"], { home });
    expect(first.code).toBe(0);
    const runsBefore = readdirSync(join(home, "runs"));
    const filler = fillLeaving(tmpfs, 0);
    const notices = join(elsewhere(), "notices");

    const r = await li(["agent", "--ledger-retry", "0", "--notify", `${RECORD} ${notices}`, "--", "sh", "-c", "echo RAN; exit 3"], { home });

    expect(r.stdout).toBe("RAN\n");
    expect(r.code).toBe(1); // the command's outcome (failed), not 2 and not 78
    expect(r.stderr).toContain(`ledger ${join(home, "state.db")}: disk full`);
    // Unreachable, so bound for the spool (§17) — which is on the same full disk: nothing recorded anywhere.
    expect(r.stderr).toMatch(new RegExp(`cannot spool the leg in ${join(home, "spool")} \\(.*ENOSPC.*\\); it ran unrecorded`));
    expect(r.stderr).toMatch(/warning: cannot write the run directory \S+ \(ENOSPC/);
    expect(lines(r).at(-1)).toMatch(/^li: failed \(run\.failed\.exit_nonzero\) session \S+ branch \S+ \(not recorded\)$/);
    expect(readdirSync(join(home, "runs"))).toEqual(runsBefore);
    // Once, undurable: no event id (nothing was recorded to de-duplicate against).
    expect(recorded(notices)).toEqual([expect.stringMatching(/^ failed session \S+ ?$/)]);
    const envelope = JSON.parse(readFileSync(`${notices}.stdin`, "utf8"));
    expect(envelope).toMatchObject({ durable: false, terminal_status: "failed" });
    // The run directory it would name was removed (empty): the envelope names no directory that is not there.
    expect(envelope.artifacts).toEqual([]);

    rmSync(filler);
    await expectLedgerSound(join(home, "state.db"));
    expect(sessions(join(home, "state.db")).map((s) => s.status)).toEqual(["completed"]);
  });

  test("a detached leg exits 78 naming the ledger, runs nothing and leaves no run directory", async () => {
    const tmpfs = disk();
    if (!tmpfs) return;
    const home = join(tmpfs, "home");
    expect((await li(["agent", "--", "true"], { home })).code).toBe(0);
    const runsBefore = readdirSync(join(home, "runs"));
    const marker = join(elsewhere(), "ran");
    const filler = fillLeaving(tmpfs, 0);

    const r = await li(["agent", "--detach", "--", "sh", "-c", `touch ${marker}`], { home });

    expect(r.code).toBe(78);
    expect(r.stdout).toBe("");
    expect(lines(r)).toEqual([expect.stringContaining(`ledger ${join(home, "state.db")}: disk full`)]);
    expect(existsSync(marker)).toBe(false);
    expect(readdirSync(join(home, "runs"))).toEqual(runsBefore);
    rmSync(filler);
    await expectLedgerSound(join(home, "state.db"));
  });

  test("only the run directories on the full disk: the leg is recorded, its command runs, the empty run directory is removed", async () => {
    const tmpfs = disk();
    if (!tmpfs) return;
    const home = elsewhere();
    const runs = join(tmpfs, "runs");
    mkdirSync(runs);
    const filler = fillLeaving(tmpfs, 0);

    const r = await li(["agent", "--", "sh", "-c", "echo RAN"], { home, env: { LI_RUNS_ROOT: runs } });

    expect(r.code).toBe(0);
    expect(r.stdout).toBe("RAN\n");
    expect(r.stderr).toMatch(/warning: cannot write the run directory \S+ \(ENOSPC/);
    expect(lines(r).at(-1)).toMatch(/^li: completed \(run\.completed\.ok\) session \S+ branch \S+$/);
    expect(readdirSync(runs)).toEqual([]);
    rmSync(filler);
    await expectLedgerSound(join(home, "state.db"));
    expect(sessions(join(home, "state.db"))).toEqual([expect.objectContaining({ status: "completed", exit_code: 0 })]);
  });
});

describeSqliteOnly("disk-full")("disk full during the command's output (the run directory on the full disk, the ledger elsewhere)", () => {
  test("the stream file stops with one warning; passthrough goes on, the command neither blocks nor dies, and its outcome is recorded", async () => {
    const tmpfs = disk();
    if (!tmpfs) return;
    const home = elsewhere();
    const runs = join(tmpfs, "runs");
    mkdirSync(runs);
    // Room for the run directory's small files, not for the output.
    const filler = fillLeaving(tmpfs, 64 * 1024);
    const lineCount = 200_000; // ~2.2 MB of "line N\n"

    const r = await li(["agent", "--", "sh", "-c", `seq -f 'line %.0f' 1 ${lineCount}; echo DONE; exit 3`], { home, env: { LI_RUNS_ROOT: runs } });

    const out = r.stdout.split("\n");
    expect(out.length).toBe(lineCount + 2);
    expect(out.at(-2)).toBe("DONE");
    expect(out[lineCount - 1]).toBe(`line ${lineCount}`);
    expect(r.code).toBe(1);
    expect(r.stderr.match(/warning: cannot write the stream file/g)).toHaveLength(1);
    expect(r.stderr).toContain("ENOSPC");
    expect(lines(r).at(-1)).toMatch(/^li: failed \(run\.failed\.exit_nonzero\) session \S+ branch \S+$/);
    // The stream file stays for the record, with what fitted.
    expect(onlyStreamText(runs)).toStartWith("line 1\nline 2\n");
    rmSync(filler);
    await expectLedgerSound(join(home, "state.db"));
    expect(sessions(join(home, "state.db"))).toEqual([expect.objectContaining({ status: "failed", exit_code: 3 })]);
  });
});

describeSqliteOnly("disk-full")("disk full at teardown (the ledger and the spool on the full disk, the run directory elsewhere)", () => {
  test("li says plainly the outcome was NOT recorded (nor spooled), naming the ledger and the reason, prints no summary, and exits 78", async () => {
    const tmpfs = disk();
    if (!tmpfs) return;
    const home = join(tmpfs, "home");
    const runs = join(elsewhere(), "runs");
    const filler = join(tmpfs, "filler");
    // The command itself fills the disk to the last block after setup committed (dd stops at ENOSPC):
    // the final write is the first to need space. No timing involved.
    const command = `dd if=/dev/zero of=${filler} bs=4096 2>/dev/null; echo FILLED`;

    const r = await li(["agent", "--ledger-retry", "0", "--", "sh", "-c", command], { home, env: { LI_RUNS_ROOT: runs } });

    expect(r.stdout).toBe("FILLED\n");
    expect(r.code).toBe(78);
    const dbPath = join(home, "state.db");
    const said = lines(r);
    expect(said).toHaveLength(2);
    // The spool is on the same full disk: the entry cannot be written either (§17), and nothing is left there.
    expect(said[0]).toMatch(new RegExp(`^li: cannot spool the outcome in ${join(home, "spool")}: .*ENOSPC`));
    expect(existsSync(join(home, "spool")) ? readdirSync(join(home, "spool")) : []).toEqual([]);
    expect(said[1]).toMatch(new RegExp(`^li: the outcome was NOT recorded: ledger ${dbPath}: disk full: .*SQLITE_FULL.*; it was completed \\(run\\.completed\\.ok\\) session \\S+ branch \\S+ \\(command exit 0\\)`));
    expect(r.stderr).not.toMatch(/^li: completed/m);
    // The stream file and the run directory stay for the record.
    expect(onlyStreamText(runs)).toBe("FILLED\n");
    rmSync(filler);
    // The ledger is whole; the session is still running (the reaper will call it a phantom) and its history agrees.
    await expectLedgerSound(dbPath);
    expect(sessions(dbPath)).toEqual([expect.objectContaining({ status: "running", exit_code: null })]);
  });

  test("the issue's reproduction: everything on the 2 MiB disk and a command printing 3 MB — NOT recorded, 78, the output passed through whole", async () => {
    const tmpfs = disk();
    if (!tmpfs) return;
    const home = join(tmpfs, "home");
    const bytes = 3 * 1024 * 1024;

    const r = await li(["agent", "--ledger-retry", "0", "--", "sh", "-c", `head -c ${bytes} /dev/zero | tr '\\0' x; echo`], { home });

    expect(r.stdout.length).toBe(bytes + 1);
    expect(r.code).toBe(78);
    expect(r.stderr).toMatch(/warning: cannot write the stream file \S+ \(ENOSPC/);
    expect(lines(r).at(-1)).toMatch(new RegExp(`^li: the outcome was NOT recorded: ledger ${join(home, "state.db")}: disk full`));
    expect(r.stderr).not.toMatch(/^li: completed/m);
    const runs = readdirSync(join(home, "runs"));
    expect(runs).toHaveLength(1);
    // Room again: the ledger is whole and still says running, as its history does.
    rmSync(join(home, "runs", runs[0]!, "stream"), { recursive: true });
    await expectLedgerSound(join(home, "state.db"));
    expect(sessions(join(home, "state.db"))).toEqual([expect.objectContaining({ status: "running" })]);
  });

  test("--json says persisted: false with the ledger error", async () => {
    const tmpfs = disk();
    if (!tmpfs) return;
    const home = join(tmpfs, "home");
    const filler = join(tmpfs, "filler");
    const r = await li(["agent", "--json", "--ledger-retry", "0", "--", "sh", "-c", `dd if=/dev/zero of=${filler} bs=4096 2>/dev/null; true`], { home, env: { LI_RUNS_ROOT: join(elsewhere(), "runs") } });
    expect(r.code).toBe(78);
    const record = JSON.parse(r.stdout);
    expect(record).toMatchObject({ status: "completed", exit_code: 0, persisted: false, ledger_error: expect.stringContaining(`ledger ${join(home, "state.db")}: disk full`) });
    rmSync(filler);
    await expectLedgerSound(join(home, "state.db"));
  });
});

describeSqliteOnly("disk-full")("disk full at teardown with the spool elsewhere (§17: the ledger on the full disk, LI_HOME not)", () => {
  test("the outcome is spooled and li exits by it; once space is freed li watch --once replays it: one terminal transition, the notice fires once, and li wait started during the outage returns the real outcome", async () => {
    const tmpfs = disk();
    if (!tmpfs) return;
    const home = elsewhere();
    const dbPath = join(tmpfs, "state.db");
    const env = { LI_DB: dbPath };
    const filler = join(tmpfs, "filler");
    const notices = join(elsewhere(), "notices");
    // The command fills the ledger's disk to the last block after setup committed: the final write is the first to need space.
    const r = await li(["agent", "--ledger-retry", "1s", "--notify", `${RECORD} ${notices}`, "--", "sh", "-c", `dd if=/dev/zero of=${filler} bs=4096 2>/dev/null; exit 3`], { home, env });

    expect(r.code).toBe(1); // the command's outcome (failed), not 78
    const said = lines(r);
    expect(said[0]).toMatch(new RegExp(`^li: the ledger is unreachable \\(ledger ${dbPath}: disk full: .*\\); retrying the final write for up to 1s$`));
    expect(said.at(-1)).toMatch(new RegExp(`^li: the outcome is spooled in ${join(home, "spool")}/\\S+\\.json \\(ledger ${dbPath}: disk full: .*\\); .*; it was failed \\(run\\.failed\\.exit_nonzero\\) session \\S+`));
    expect(said).toHaveLength(2);
    expect(readdirSync(join(home, "spool"))).toHaveLength(1);
    const [session] = sessions(dbPath);
    expect(session).toMatchObject({ status: "running" });
    expect(recorded(notices)).toEqual([]);
    // Started while the outcome is only in the spool and the disk is still full.
    const waiter = Bun.spawn([LI_BINARY, "wait", session!.id, "--timeout", "120"], { env: liEnv(home, env), stdout: "pipe", stderr: "pipe" });
    const stillFull = await li(["watch", "--once"], { home, env });
    expect(stillFull.code).toBe(78);
    expect(readdirSync(join(home, "spool"))).toHaveLength(1);

    rmSync(filler);
    const watch = await li(["watch", "--once"], { home, env });

    expect(watch.code).toBe(0);
    expect(watch.stdout).toMatch(/replay entry=\S+ session_id=\S+ result=applied status=failed/);
    expect(await waiter.exited).toBe(1);
    expect(await new Response(waiter.stdout).text()).toMatch(new RegExp(`^${session!.id}\\tstatus=failed\\treason=run\\.failed\\.exit_nonzero\\t.*\\texit_code=3\\n$`));
    expect(sessions(dbPath)).toEqual([expect.objectContaining({ status: "failed", exit_code: 3 })]);
    const db = ledgerRows(home, { sqlitePath: dbPath });
    expect(await db.all("SELECT actor FROM status_transitions WHERE terminal_event = 1")).toEqual([{ actor: "li.replay" }]);
    expect(readdirSync(join(home, "spool"))).toEqual([]);
    expect(recorded(notices)).toHaveLength(1);
    await expectLedgerSound(dbPath);
  });
});

describeSqliteOnly("disk-full")("disk full before setup with the spool elsewhere (§17 item 4)", () => {
  test("the leg waits --ledger-retry, runs, and spools itself whole; once space is freed li watch --once records it with its notice", async () => {
    const tmpfs = disk();
    if (!tmpfs) return;
    const home = elsewhere();
    const dbPath = join(tmpfs, "state.db");
    const env = { LI_DB: dbPath };
    expect((await li(["agent", "--", "true"], { home, env })).code).toBe(0);
    const filler = fillLeaving(tmpfs, 0);
    const notices = join(elsewhere(), "notices");

    const r = await li(["agent", "--ledger-retry", "200ms", "--notify", `${RECORD} ${notices}`, "--", "sh", "-c", "echo RAN"], { home, env });

    expect(r.stdout).toBe("RAN\n");
    expect(r.code).toBe(0);
    expect(lines(r).at(-1)).toMatch(new RegExp(`^li: the outcome is spooled in ${join(home, "spool")}/\\S+\\.json \\(ledger ${dbPath}: disk full`));
    expect(recorded(notices)).toEqual([]);
    rmSync(filler);
    const watch = await li(["watch", "--once"], { home, env });
    expect(watch.code).toBe(0);
    expect(watch.stdout).toMatch(/replay entry=\S+ session_id=\S+ result=applied status=completed/);
    expect(sessions(dbPath).map((s) => s.status)).toEqual(["completed", "completed"]);
    expect(recorded(notices)).toHaveLength(1);
    expect(readdirSync(join(home, "spool"))).toEqual([]);
    await expectLedgerSound(dbPath);
  });
});
