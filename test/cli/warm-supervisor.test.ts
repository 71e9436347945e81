// li watch's warm supervisor (SPEC §19 dispatch): the watcher keeps one `li agent` started ahead of need,
// waiting for the next leased run, so a dispatch pays no process start-up. Through dist/li with real
// watchers and legs, on either backend: the run it takes runs as the submitter asked (directory and
// environment, nothing of the watcher's), a kill -9 of it while it waits or just after it took a run costs
// no run, and it ends with its watcher.

import { describe, expect, test } from "bun:test";
import { mkdirSync, readFileSync, readdirSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { onPostgres } from "../helpers/backends.ts";
import { li } from "../helpers/cli.ts";
import { watchHomes, type Home, type Watcher } from "../helpers/watch-homes.ts";
import { NeverHappens, OWNER_VARIABLE, signalPid, until, untilGone, validPid } from "../helpers/until.ts";

const { spawned, newHome, startWatcher } = watchHomes(["--log-format", "json"]);

/** The supervisors `watcher` started ahead of need, by /proc: its children whose environment marks them so. */
function warmOf(watcher: Subprocess): number[] {
  const found: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid !== watcher.pid) continue;
      if (readFileSync(`/proc/${name}/environ`, "utf8").split("\0").includes("LI_SUPERVISOR_WARM=fd:4")) found.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/** The one supervisor waiting for `watcher`'s next run (other than `not`), once there is one. */
async function waitingSupervisor(w: Watcher, not: readonly number[] = []): Promise<number> {
  const pid = await until("the watcher's warm supervisor", () => {
    if (w.proc.exitCode !== null) throw new NeverHappens(`the watcher exited ${w.proc.exitCode}: ${w.lines.join(" | ")}`);
    const pids = warmOf(w.proc).filter((p) => !not.includes(p));
    return pids.length === 1 ? pids[0] : null;
  }, { timeoutMs: 30_000 });
  return validPid(pid, "the warm supervisor's pid");
}

/**
 * Runs one run to its end, then finds the supervisor waiting for the next: not that run's, which still shows
 * the waiting one's environment in /proc until it exits (the next is started a moment after its report).
 */
async function firstRunThenWaiting(h: Home, w: Watcher): Promise<number> {
  const first = await untilEnded(h, await submit(h, "warm", ["true"]), w);
  expect(first.status).toBe("completed");
  return waitingSupervisor(w, [await supervisorOf(h, first.session_id!)]);
}

/** Submits a detached run to `queue` from `cwd`; returns its id. */
async function submit(h: Home, queue: string, command: string[], options: { cwd?: string; env?: Record<string, string>; passEnv?: string[] } = {}): Promise<string> {
  const pass = [OWNER_VARIABLE, ...(options.passEnv ?? [])].flatMap((name) => ["--pass-env", name]);
  const r = await li(["agent", "--detach", "--queue", queue, ...pass, "--", ...command], { home: h.home, cwd: options.cwd ?? h.dir, ...(options.env ? { env: options.env } : {}) });
  expect(r.stderr).toBe("");
  expect(r.code).toBe(0);
  return r.stdout.trim();
}

interface RunRow {
  id: string;
  status: string;
  status_reason_code: string;
  attempts: number;
  session_id: string | null;
}

const run = async (h: Home, id: string) => (await h.rows.get<RunRow>("SELECT * FROM schedule_runs WHERE id = ?", id))!;
const terminal = (s: string) => ["completed", "failed", "timed_out", "skipped", "cancelled"].includes(s);

async function untilEnded(h: Home, id: string, w?: Watcher): Promise<RunRow> {
  return until(`run ${id} to end`, async () => {
    if (w && w.proc.exitCode !== null) throw new NeverHappens(`the watcher exited ${w.proc.exitCode}: ${w.lines.join(" | ")}`);
    const r = await run(h, id);
    return terminal(r.status) ? r : null;
  }, { timeoutMs: 60_000, intervalMs: 20 });
}

const supervisorOf = async (h: Home, sessionId: string) => Number((await h.rows.get<{ pid: number }>("SELECT pid FROM legs WHERE session_id = ?", sessionId))!.pid);
const history = async (h: Home, id: string) =>
  (await h.rows.all<{ status: string; reason_code: string }>("SELECT status, reason_code FROM status_transitions WHERE entity_id = ? ORDER BY seq", id)).map((t) => `${t.status}:${t.reason_code}`);

describe("li watch's warm supervisor", () => {
  test("a run takes the waiting supervisor and runs in the submitter's directory with its environment, nothing of the watcher's; another waits after; SIGTERM of the watcher ends it", async () => {
    const h = newHome();
    expect((await li(["queue", "set", "warm", "--parallel=0"], { home: h.home })).code).toBe(0);
    const w = startWatcher(h, { FOO: "the watcher's", WATCHER_ONLY: "1" });
    const waiting = await firstRunThenWaiting(h, w);

    const work = join(h.dir, "work");
    mkdirSync(work);
    const out = join(h.dir, "out");
    const script = `pwd > "$0"; echo "\${FOO-unset}" >> "$0"; echo "\${WATCHER_ONLY-unset}" >> "$0"; echo "\${LI_SUPERVISOR_WARM-unset}" >> "$0"; echo "\${LI_SUPERVISOR_READY-unset}" >> "$0"`;
    const id = await submit(h, "warm", ["sh", "-c", script, out], { cwd: work, env: { FOO: "the submitter's" }, passEnv: ["FOO"] });
    const ended = await untilEnded(h, id, w);
    expect(ended.status).toBe("completed");
    // The run's supervisor was the one waiting (its pid is the leg's).
    expect(await supervisorOf(h, ended.session_id!)).toBe(waiting);
    expect(readFileSync(out, "utf8").trim().split("\n")).toEqual([work, "the submitter's", "unset", "unset", "unset"]);
    expect(await history(h, id)).toEqual(["queued:schedule.queued.created", "running:schedule.running.leased", "completed:run.completed.ok"]);

    const next = await waitingSupervisor(w, [waiting]);
    w.proc.kill("SIGTERM");
    expect(await w.proc.exited).toBe(0);
    await untilGone(next, "the waiting supervisor to end with its watcher");
  }, 90_000);

  test("kill -9 of the waiting supervisor: the next run's supervisor starts the ordinary way, the run runs once, and another waits after", async () => {
    const h = newHome();
    expect((await li(["queue", "set", "warm", "--parallel=0"], { home: h.home })).code).toBe(0);
    const w = startWatcher(h);
    const waiting = await firstRunThenWaiting(h, w);
    signalPid(waiting, "SIGKILL", { what: "the waiting supervisor" });
    await untilGone(waiting);

    const id = await submit(h, "warm", ["true"]);
    const ended = await untilEnded(h, id, w);
    expect([ended.status, ended.attempts]).toEqual(["completed", 1]);
    expect(await supervisorOf(h, ended.session_id!)).not.toBe(waiting);
    expect(await history(h, id)).toEqual(["queued:schedule.queued.created", "running:schedule.running.leased", "completed:run.completed.ok"]);
    await waitingSupervisor(w, [waiting]);
    w.proc.kill("SIGTERM");
    await w.proc.exited;
  }, 90_000);

  test("kill -9 of the supervisor just after it took a run (before its setup): the run is left to its lease, queued again when it expires, and runs once", async () => {
    const h = newHome();
    const hold = join(h.dir, "hold");
    expect((await li(["queue", "set", "warm", "--parallel=0"], { home: h.home })).code).toBe(0);
    const w = startWatcher(h, { LI_TEST_WARM_HOLD: hold });
    const waiting = await firstRunThenWaiting(h, w);

    writeFileSync(hold, "");
    const work = join(h.dir, "work");
    mkdirSync(work);
    const id = await submit(h, "warm", ["true"], { cwd: work });
    // It took the run: its working directory is the run's now (it is held there, before anything else).
    await until("the waiting supervisor to take the run", () => {
      try {
        return readlinkSync(`/proc/${waiting}/cwd`) === work;
      } catch {
        return false;
      }
    }, { timeoutMs: 30_000 });
    signalPid(waiting, "SIGKILL", { what: "the supervisor holding the run" });
    await untilGone(waiting);
    const failed = await until("the watcher to leave the run to its lease", () => w.lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((e) => e.action === "schedule_start_failed" && e.run_id === id), { timeoutMs: 30_000 });
    expect(failed).toMatchObject({ left_to_lease: true });
    const left = await run(h, id);
    expect([left.status, left.session_id]).toEqual(["running", null]);
    rmSync(hold);
    w.proc.kill("SIGTERM");
    await w.proc.exited;

    // Backdated instead of waiting out the lease (60 s): nobody holds it any more.
    await h.rows.run("UPDATE schedule_runs SET lease_expires_at = lease_expires_at - 3600 WHERE id = ?", id);
    expect((await li(["watch", "--once"], { home: h.home })).code).toBe(0);
    const ended = await untilEnded(h, id);
    expect([ended.status, ended.attempts]).toEqual(["completed", 2]);
    expect(await history(h, id)).toEqual([
      "queued:schedule.queued.created",
      "running:schedule.running.leased",
      "queued:run.queued.lease_expired",
      "running:schedule.running.leased",
      "completed:run.completed.ok",
    ]);
  }, 90_000);

  test("while it waits it holds its ledger open (SQLite's file, PostgreSQL's session), and the run it takes is recorded through it", async () => {
    const h = newHome();
    expect((await li(["queue", "set", "warm", "--parallel=0"], { home: h.home })).code).toBe(0);
    const w = startWatcher(h);
    const waiting = await waitingSupervisor(w);
    const holdsLedger = () => {
      const links: string[] = [];
      for (const fd of readdirSync(`/proc/${waiting}/fd`)) {
        if (fd === "3" || fd === "4") continue; // its channels to the watcher
        try {
          links.push(readlinkSync(`/proc/${waiting}/fd/${fd}`));
        } catch {
          // closed meanwhile
        }
      }
      return onPostgres ? links.some((l) => l.startsWith("socket:")) : links.includes(join(h.home, "state.db"));
    };
    await until("the waiting supervisor to hold its ledger open", holdsLedger, { timeoutMs: 30_000 });
    const id = await submit(h, "warm", ["true"]);
    const ended = await untilEnded(h, id, w);
    expect([ended.status, ended.attempts]).toEqual(["completed", 1]);
    expect(await supervisorOf(h, ended.session_id!)).toBe(waiting);
    w.proc.kill("SIGTERM");
    await w.proc.exited;
  }, 90_000);

  test("kill -9 of the watcher: the supervisor waiting for it ends too", async () => {
    const h = newHome();
    expect((await li(["queue", "set", "warm", "--parallel=0"], { home: h.home })).code).toBe(0);
    const w = startWatcher(h);
    const waiting = await waitingSupervisor(w);
    w.proc.kill("SIGKILL");
    await w.proc.exited;
    await untilGone(waiting, "the waiting supervisor to end with its killed watcher");
  }, 60_000);
});
