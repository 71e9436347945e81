// The disk-full matrix (issue 10, §16–§18) on a real 2 MiB tmpfs: full before setup, during the
// command's output, and at teardown. Each case asserts the command's exit code, li's exit code and
// message, and the ledger: integrity check ok, every status equal to its newest history row, no orphan
// legs. The disk is filled precisely (a filler file sized from statfs, or written until ENOSPC), never
// by timing; the ledger and the run directories are put on different disks to isolate each case.

import { Database } from "bun:sqlite";
import { afterAll, beforeAll, expect, test } from "bun:test";
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, statfsSync, writeFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import { LI_BINARY, li, liEnv, type LiResult } from "../helpers/cli.ts";
import { describeSqliteOnly } from "../helpers/backends.ts";
import { tempDir } from "../helpers/ledger.ts";
import { ledgerRows } from "../helpers/ledger-rows.ts";
import { RECORD, recorded } from "../notify/helpers.ts";
import { until } from "../helpers/until.ts";


let mountPoint: string | null = null;
/** A 20 MiB disk, the size of the reproductions of §20 (a reserve of 1 % is then ~200 KiB). */
let largeMountPoint: string | null = null;
const scratch: string[] = [];

/** A tmpfs of `size` on a new temp dir, or why it cannot be mounted here. Under CI it must mount: not being able to is a failure. */
function mountTmpfs(size: string): { dir: string } | { problem: string } {
  if (process.getuid?.() !== 0) return { problem: "mounting a tmpfs needs root" };
  const dir = tempDir("li-diskfull-");
  const mount = Bun.spawnSync(["mount", "-t", "tmpfs", "-o", `size=${size},mode=0700`, "tmpfs", dir]);
  if (mount.exitCode !== 0) return { problem: `mount -t tmpfs failed: ${mount.stderr.toString().trim()}` };
  return { dir };
}

let cannotRun: string | null = null;
beforeAll(() => {
  const small = mountTmpfs("2m");
  const large = "dir" in small ? mountTmpfs("20m") : small;
  if ("dir" in small) mountPoint = small.dir;
  if ("dir" in large) largeMountPoint = large.dir;
  cannotRun = "problem" in large ? large.problem : null;
  if (cannotRun && process.env.CI !== "true") {
    console.error(`\n*** the disk-full matrix DID NOT RUN: ${cannotRun} (under CI=true this is a failure) ***\n`);
  }
});
afterAll(() => {
  for (const dir of [mountPoint, largeMountPoint]) {
    if (!dir) continue;
    Bun.spawnSync(["umount", dir]);
    rmSync(dir, { recursive: true, force: true });
  }
  scratch.forEach((d) => rmSync(d, { recursive: true, force: true }));
});

/** The 2 MiB tmpfs (or the 20 MiB one), emptied, or null when the matrix cannot run here (failing under CI). */
function disk(which: "small" | "large" = "small"): string | null {
  if (cannotRun) {
    if (process.env.CI === "true") throw new Error(`the disk-full matrix cannot run: ${cannotRun}`);
    return null;
  }
  const dir = which === "small" ? mountPoint! : largeMountPoint!;
  for (const entry of readdirSync(dir)) rmSync(join(dir, entry), { recursive: true, force: true });
  return dir;
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

  test("a full disk is not waited for (§20): with the default --ledger-retry of 2 minutes the command starts at once, after one warning, and the summary says (not recorded)", async () => {
    const tmpfs = disk();
    if (!tmpfs) return;
    const home = join(tmpfs, "home");
    expect((await li(["agent", "--", "true"], { home })).code).toBe(0);
    const filler = fillLeaving(tmpfs, 0);

    const r = await li(["agent", "--", "sh", "-c", "echo RAN"], { home });

    expect(r.stdout).toBe("RAN\n");
    expect(r.code).toBe(0);
    expect(r.stderr).not.toMatch(/retrying|waiting up to/);
    expect(r.stderr.match(/^li: warning: .*/gm)).toEqual([
      expect.stringMatching(new RegExp(`^li: warning: ledger ${join(home, "state.db")}: disk full: .*; a full disk is not waited for: the command runs now`)),
      // Its run directory, on the same disk.
      expect.stringMatching(/^li: warning: cannot write the run directory/),
    ]);
    expect(lines(r).at(-1)).toMatch(/^li: completed \(run\.completed\.ok\) session \S+ branch \S+ \(not recorded\)$/);
    rmSync(filler);
    await expectLedgerSound(join(home, "state.db"));
  }, 30_000);

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

  test("only the run directories on the full disk, a detached leg: li wait says artifact_dir=-, li show names no artifact directory, and the warning it could not log is in the evidence", async () => {
    const tmpfs = disk();
    if (!tmpfs) return;
    const home = elsewhere();
    const runs = join(tmpfs, "runs");
    mkdirSync(runs);
    const filler = fillLeaving(tmpfs, 0);
    const env = { LI_RUNS_ROOT: runs };

    const started = await li(["agent", "--detach", "--", "sh", "-c", "exit 0"], { home, env });
    expect(started.code).toBe(0);
    const sessionId = started.stdout.trim();
    const waited = await li(["wait", sessionId, "--timeout", "60"], { home, env });

    expect(waited.code).toBe(0);
    expect(waited.stdout).toMatch(new RegExp(`^${sessionId}\tstatus=completed\treason=run\.completed\.ok\tartifact_dir=-\texit_code=0\n$`));
    const shown = JSON.parse((await li(["show", sessionId, "--json"], { home, env })).stdout);
    expect(shown.artifact_dir).toBeNull();
    expect((await li(["show", sessionId], { home, env })).stdout).toContain("- (its run directory could not be written)");
    const db = ledgerRows(home, { sqlitePath: join(home, "state.db") });
    const [row] = (await db.all("SELECT evidence_refs FROM status_transitions WHERE terminal_event = 1")) as { evidence_refs: string }[];
    await db.close();
    expect(JSON.parse(row!.evidence_refs)).toContainEqual({ kind: "run_dir_unwritable", path: expect.stringContaining(runs), error: expect.stringContaining("ENOSPC") });
    expect(readdirSync(runs)).toEqual([]);
    rmSync(filler);
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
    // No reserve: the copy runs until the disk itself refuses (the reserve has tests of its own below).
    writeFileSync(join(home, "settings.yaml"), "agent:\n  stream_reserve: 0\n");
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
  test("the outcome goes into the spool space the leg took at setup (§20): li exits by the outcome, and once space is freed li watch --once records it", async () => {
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
    expect(r.code).toBe(0);
    const dbPath = join(home, "state.db");
    expect(lines(r)).toEqual([expect.stringMatching(new RegExp(`^li: the outcome is spooled in ${join(home, "spool")}/\\S+\\.json \\(ledger ${dbPath}: disk full: .*SQLITE_FULL.*\\); .*; it was completed \\(run\\.completed\\.ok\\) session \\S+`))]);
    // Only the entry: the reservation became it.
    expect(readdirSync(join(home, "spool"))).toEqual([expect.stringMatching(/^\S+\.json$/)]);
    expect(onlyStreamText(runs)).toBe("FILLED\n");
    rmSync(filler);
    await expectLedgerSound(dbPath);
    expect(sessions(dbPath)).toEqual([expect.objectContaining({ status: "running", exit_code: null })]);
    const watch = await li(["watch", "--once"], { home, env: { LI_RUNS_ROOT: runs } });
    expect(watch.code).toBe(0);
    expect(watch.stdout).toMatch(/replay entry=\S+ session_id=\S+ result=applied status=completed/);
    expect(sessions(dbPath)).toEqual([expect.objectContaining({ status: "completed", exit_code: 0 })]);
    expect(readdirSync(join(home, "spool"))).toEqual([]);
    await expectLedgerSound(dbPath);
  });

  test("without room in the spool either (the reservation given up), li says plainly the outcome was NOT recorded, prints no summary, and exits 78", async () => {
    const tmpfs = disk();
    if (!tmpfs) return;
    const home = join(tmpfs, "home");
    const runs = join(elsewhere(), "runs");
    const filler = join(tmpfs, "filler");
    // The command removes the leg's reservation, then fills the disk: nothing is left for the entry.
    const command = `rm -f ${join(home, "spool")}/*.reserved-*; dd if=/dev/zero of=${filler} bs=4096 2>/dev/null; echo FILLED`;

    const r = await li(["agent", "--ledger-retry", "0", "--", "sh", "-c", command], { home, env: { LI_RUNS_ROOT: runs } });

    expect(r.stdout).toBe("FILLED\n");
    expect(r.code).toBe(78);
    const dbPath = join(home, "state.db");
    const said = lines(r);
    expect(said).toHaveLength(2);
    expect(said[0]).toMatch(new RegExp(`^li: cannot spool the outcome in ${join(home, "spool")}: .*ENOSPC`));
    expect(readdirSync(join(home, "spool"))).toEqual([]);
    expect(said[1]).toMatch(new RegExp(`^li: the outcome was NOT recorded: ledger ${dbPath}: disk full: .*SQLITE_FULL.*; it was completed \\(run\\.completed\\.ok\\) session \\S+ branch \\S+ \\(command exit 0\\)`));
    expect(r.stderr).not.toMatch(/^li: completed/m);
    rmSync(filler);
    await expectLedgerSound(dbPath);
    expect(sessions(dbPath)).toEqual([expect.objectContaining({ status: "running", exit_code: null })]);
  });

  test("--json says persisted: true with the spooled entry and the ledger error", async () => {
    const tmpfs = disk();
    if (!tmpfs) return;
    const home = join(tmpfs, "home");
    const filler = join(tmpfs, "filler");
    const r = await li(["agent", "--json", "--ledger-retry", "0", "--", "sh", "-c", `dd if=/dev/zero of=${filler} bs=4096 2>/dev/null; true`], { home, env: { LI_RUNS_ROOT: join(elsewhere(), "runs") } });
    expect(r.code).toBe(0);
    const record = JSON.parse(r.stdout);
    expect(record).toMatchObject({ status: "completed", exit_code: 0, persisted: true, spooled: expect.stringContaining(join(home, "spool")), ledger_error: expect.stringContaining(`ledger ${join(home, "state.db")}: disk full`) });
    rmSync(filler);
    await expectLedgerSound(join(home, "state.db"));
  });
});

describeSqliteOnly("disk-full")("running out of disk with everything in LI_HOME (§20: the stream copy keeps room for li's records)", () => {
  test("the issue's reproduction: a 20 MiB LI_HOME and a command printing 30 MB — one warning at the reserve, the output passed through whole, the leg completed and recorded (or spooled, then replayed as completed), never a phantom", async () => {
    const tmpfs = disk("large");
    if (!tmpfs) return;
    const home = join(tmpfs, "home");
    const bytes = 30_000_000;

    const r = await li(["agent", "--", "sh", "-c", `yes | head -c ${bytes}`], { home });

    expect(r.stdout.length).toBe(bytes);
    expect(r.code).toBe(0);
    const warnings = r.stderr.match(/warning: .*/g) ?? [];
    expect(warnings).toEqual([expect.stringMatching(/^warning: the stream file \S+ stops here: its disk keeps 204\.8KiB free for li's own records \(agent\.stream_reserve\); the output still passes through, the rest is not kept$/)]);
    expect(r.stderr).not.toContain("NOT recorded");
    const dbPath = join(home, "state.db");
    if (/the outcome is spooled/.test(r.stderr)) {
      // The ledger could not take it even so: the spool did, and li watch records it once there is room.
      rmSync(join(home, "runs"), { recursive: true });
      expect((await li(["watch", "--once"], { home })).stdout).toMatch(/result=applied status=completed/);
    } else {
      expect(lines(r).at(-1)).toMatch(/^li: completed \(run\.completed\.ok\) session \S+ branch \S+$/);
    }
    expect(sessions(dbPath)).toEqual([expect.objectContaining({ status: "completed", exit_code: 0 })]);
    // The reservation was given back; the stream file kept what fitted above the reserve.
    expect(readdirSync(join(home, "spool"))).toEqual([]);
    await expectLedgerSound(dbPath);
    const reap = await li(["watch", "--once", "--phantom-grace", "0"], { home });
    expect(reap.stdout).not.toMatch(/^\S+ reap /m);
    expect(sessions(dbPath).map((s) => s.status)).toEqual(["completed"]);
  });

  test("agent.stream_max caps one leg's copy: one warning naming the key, the output passed through whole, the leg completed", async () => {
    const tmpfs = disk("large");
    if (!tmpfs) return;
    const home = join(tmpfs, "home");
    mkdirSync(home, { recursive: true });
    writeFileSync(join(home, "settings.yaml"), "agent:\n  stream_max: 1M\n");

    const r = await li(["agent", "--", "sh", "-c", "yes | head -c 3000000"], { home });

    expect(r.stdout.length).toBe(3_000_000);
    expect(r.code).toBe(0);
    expect(r.stderr.match(/warning: .*/g)).toEqual([expect.stringMatching(/^warning: the stream file \S+ reached agent\.stream_max \(1\.00MiB\); the output still passes through, the rest is not kept$/)]);
    const kept = onlyStreamText(join(home, "runs"));
    expect(kept.length).toBeLessThanOrEqual(1024 * 1024);
    expect(kept.length).toBeGreaterThan(0);
    expect(sessions(join(home, "state.db"))).toEqual([expect.objectContaining({ status: "completed" })]);
  });

  test("a leg killed -9 leaves its spool reservation, and li watch removes it once its owner is dead", async () => {
    const tmpfs = disk("large");
    if (!tmpfs) return;
    const home = join(tmpfs, "home");
    const ready = join(elsewhere(), "ready");
    const child = Bun.spawn([LI_BINARY, "agent", "--", "sh", "-c", `touch ${ready}; exec sleep 60`], { env: liEnv(home), stdout: "ignore", stderr: "ignore" });
    await until("the leg's command to start", () => existsSync(ready));
    const reserved = readdirSync(join(home, "spool")).filter((n) => n.includes(".reserved-"));
    expect(reserved).toEqual([expect.stringMatching(new RegExp(`\\.reserved-${child.pid}-\\d+$`))]);
    // Alive: the watcher leaves it.
    expect((await li(["watch", "--once"], { home })).stdout).not.toContain("remove_spool_reservation");
    expect(readdirSync(join(home, "spool"))).toEqual(reserved);
    child.kill("SIGKILL");
    await child.exited;

    // No grace: the reaper also kills the command the dead leg left running, as it always has.
    const watch = await li(["watch", "--once", "--phantom-grace", "0"], { home });

    expect(watch.stdout).toContain(`remove_spool_reservation path=${join(home, "spool", reserved[0]!)}`);
    expect(readdirSync(join(home, "spool"))).toEqual([]);
    expect(sessions(join(home, "state.db"))).toEqual([expect.objectContaining({ status: "failed" })]);
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
  test("the leg runs at once (a full disk is not waited for, §20) and spools itself whole; once space is freed li watch --once records it with its notice", async () => {
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
