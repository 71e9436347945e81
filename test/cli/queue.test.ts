// Scheduled runs end to end through dist/li (SPEC §19): queues with slots, leases, dependencies, retries,
// li kill, the foreground waiter and bad input — with real watchers and real legs, on either backend.

import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { li, LI_BINARY, liEnv } from "../helpers/cli.ts";
import { watchHomes, type Home, type Watcher } from "../helpers/watch-homes.ts";
import { isAlive, NeverHappens, OWNER_VARIABLE, signalPid, until, validPid } from "../helpers/until.ts";

const { spawned, newHome, startWatcher } = watchHomes();

async function stopWatcher(w: Watcher): Promise<void> {
  w.proc.kill("SIGTERM");
  await w.proc.exited;
}

/** Submits a detached run; returns its id. */
async function submit(h: Home, args: string[], command: string[]): Promise<string> {
  // The test run's owner mark travels with the leg (validPid recognises the processes this run started).
  const r = await li(["agent", "--detach", "--pass-env", OWNER_VARIABLE, ...args, "--", ...command], { home: h.home, cwd: h.dir });
  expect(r.stderr).toBe("");
  expect(r.code).toBe(0);
  return r.stdout.trim();
}

interface RunRow {
  id: string;
  status: string;
  status_reason_code: string;
  created_at: number;
  started_at: number | null;
  attempts: number;
  session_id: string | null;
  chain_parent_id: string | null;
  chain_depth: number;
  status_evidence_refs: string | null;
}

const runs = (h: Home, queue: string) => h.rows.all<RunRow>("SELECT * FROM schedule_runs WHERE queue = ? ORDER BY created_at, id", queue);
const run = async (h: Home, id: string) => (await h.rows.get<RunRow>("SELECT * FROM schedule_runs WHERE id = ?", id))!;
const terminal = (s: string) => ["completed", "failed", "timed_out", "skipped", "cancelled"].includes(s);

async function untilAllTerminal(h: Home, queue: string, n: number, w?: Watcher, timeoutMs = 60_000): Promise<RunRow[]> {
  return until(`${n} runs of ${queue} to end`, async () => {
    if (w && w.proc.exitCode !== null) throw new NeverHappens(`the watcher exited ${w.proc.exitCode}: ${w.lines.join(" | ")}`);
    const all = await runs(h, queue);
    return all.length === n && all.every((r) => terminal(r.status)) ? all : null;
  }, { timeoutMs, intervalMs: 50 });
}

describe("queues", () => {
  test("20 runs in a queue with --parallel 3: never more than 3 running (sampled throughout), all 20 end, started in FIFO order", async () => {
    const h = newHome();
    expect((await li(["queue", "set", "p3", "--parallel=3"], { home: h.home })).code).toBe(0);
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) ids.push(await submit(h, ["--queue", "p3"], ["sh", "-c", "sleep 0.2"]));
    const w = startWatcher(h);
    let most = 0;
    let samples = 0;
    const all = await until("every run of p3 to end, sampling how many run", async () => {
      if (w.proc.exitCode !== null) throw new NeverHappens(`the watcher exited: ${w.lines.join(" | ")}`);
      const row = await h.rows.get<{ n: number }>("SELECT COUNT(*) AS n FROM schedule_runs WHERE queue = 'p3' AND status = 'running'");
      most = Math.max(most, Number(row!.n));
      samples++;
      const rows = await runs(h, "p3");
      return rows.every((r) => terminal(r.status)) ? rows : null;
    }, { timeoutMs: 120_000, intervalMs: 20 });
    await stopWatcher(w);
    expect(samples).toBeGreaterThan(5);
    expect(most).toBeGreaterThan(0);
    expect(most).toBeLessThanOrEqual(3);
    expect(all.map((r) => r.status)).toEqual(Array(20).fill("completed"));
    // Oldest first: the leases' times follow the submissions'.
    const byStart = [...all].sort((a, b) => a.started_at! - b.started_at!).map((r) => r.id);
    expect(byStart).toEqual(ids);
    const sessions = await h.rows.get<{ n: number }>("SELECT COUNT(DISTINCT session_id) AS n FROM schedule_runs WHERE queue = 'p3'");
    expect(Number(sessions!.n)).toBe(20);
  }, 180_000);

  test("fleet limit: three watchers of different hosts on one ledger, queue --fleet --parallel 2, 12 runs: at most 2 run at once fleet-wide, each started exactly once", async () => {
    const h = newHome();
    expect((await li(["queue", "set", "fleet2", "--parallel=2", "--fleet"], { home: h.home })).code).toBe(0);
    for (let i = 0; i < 12; i++) await submit(h, ["--queue", "fleet2"], ["sh", "-c", "sleep 0.2"]);
    const watchers = ["host-1", "host-2", "host-3"].map((host) => startWatcher(h, { LI_HOST_ID: host }));
    let most = 0;
    const all = await until("every run of fleet2 to end, sampling how many run", async () => {
      for (const w of watchers) if (w.proc.exitCode !== null) throw new NeverHappens(`a watcher exited: ${w.lines.join(" | ")}`);
      const row = await h.rows.get<{ n: number }>("SELECT COUNT(*) AS n FROM schedule_runs WHERE queue = 'fleet2' AND status = 'running'");
      most = Math.max(most, Number(row!.n));
      const rows = await runs(h, "fleet2");
      return rows.every((r) => terminal(r.status)) ? rows : null;
    }, { timeoutMs: 120_000, intervalMs: 20 });
    for (const w of watchers) await stopWatcher(w);
    expect(most).toBeGreaterThan(0);
    expect(most).toBeLessThanOrEqual(2);
    expect(all.map((r) => [r.status, r.attempts])).toEqual(Array(12).fill(["completed", 1]));
    // Exactly one leg per run, whichever host started it.
    const legs = await h.rows.all<{ run_id: string; n: number }>("SELECT r.id AS run_id, COUNT(l.id) AS n FROM schedule_runs r JOIN legs l ON l.session_id = r.session_id WHERE r.queue = 'fleet2' GROUP BY r.id");
    expect(legs.map((l) => Number(l.n))).toEqual(Array(12).fill(1));
    const hosts = await h.rows.all<{ leased_by: string }>("SELECT DISTINCT leased_by FROM schedule_runs WHERE queue = 'fleet2'");
    expect(hosts.length).toBeGreaterThan(0);
  }, 180_000);

  test("li queue ls shows each queue's limit and counts; pause stops leasing and resume starts it again", async () => {
    const h = newHome();
    expect((await li(["queue", "set", "slow", "--parallel=2", "--fleet"], { home: h.home })).stdout).toBe("slow: parallel 2 across the fleet, lease attempts 3\n");
    expect((await li(["queue", "pause", "slow"], { home: h.home })).code).toBe(0);
    const id = await submit(h, ["--queue", "slow"], ["true"]);
    const ls = await li(["queue", "ls", "--json"], { home: h.home });
    expect(JSON.parse(ls.stdout)).toEqual([expect.objectContaining({ name: "slow", parallel: 2, scope: "fleet", paused: true, running: 0, queued: 1, waiting: 0 })]);
    const once = await li(["watch", "--once"], { home: h.home });
    expect(once.code).toBe(0);
    expect((await run(h, id)).status).toBe("queued");
    expect((await li(["queue", "resume", "slow"], { home: h.home })).code).toBe(0);
    const w = startWatcher(h);
    await untilAllTerminal(h, "slow", 1, w);
    await stopWatcher(w);
    expect((await run(h, id)).status).toBe("completed");
  }, 60_000);
});

describe("leases", () => {
  /** Kills a run's leg as a dead host would leave it: the supervisor and the command's group, SIGKILL. */
  async function killLegOf(h: Home, sessionId: string): Promise<void> {
    const leg = (await h.rows.get<{ pid: number; command_pid: number | null }>("SELECT pid, command_pid FROM legs WHERE session_id = ?", sessionId))!;
    const pid = validPid(leg.pid, "the supervisor's pid");
    if (leg.command_pid !== null && isAlive(leg.command_pid)) signalPid(validPid(leg.command_pid, "the command's pid"), "SIGKILL", { group: true });
    if (isAlive(pid)) signalPid(pid, "SIGKILL");
  }

  test("kill -9 of a watcher holding leases (its host gone): another watcher re-leases its runs once the leases expire, and each run ends once", async () => {
    const h = newHome();
    const marks = join(h.dir, "marks");
    await Bun.write(join(marks, ".keep"), "");
    // The first attempt of each run hangs (its host will die); the second ends at once.
    const script = `[ -e "${marks}/$0" ] && exit 0; touch "${marks}/$0"; exec sleep 600`;
    expect((await li(["queue", "set", "hosts", "--parallel=0"], { home: h.home })).code).toBe(0);
    const ids = [await submit(h, ["--queue", "hosts"], ["sh", "-c", script, "r1"]), await submit(h, ["--queue", "hosts"], ["sh", "-c", script, "r2"])];
    const a = startWatcher(h, { LI_HOST_ID: "host-a" });
    const leased = await until("both runs leased by host-a with their legs linked", async () => {
      const rows = await runs(h, "hosts");
      return rows.every((r) => r.status === "running" && r.session_id !== null && existsSync(join(marks, r.id === ids[0] ? "r1" : "r2"))) ? rows : null;
    }, { timeoutMs: 30_000 });
    a.proc.kill("SIGKILL");
    await a.proc.exited;
    for (const r of leased) await killLegOf(h, r.session_id!);
    // Backdated instead of waiting out the lease (60 s): nobody renews these any more.
    await h.rows.run("UPDATE schedule_runs SET lease_expires_at = lease_expires_at - 3600 WHERE queue = 'hosts'");
    const b = startWatcher(h, { LI_HOST_ID: "host-b" });
    const ended = await untilAllTerminal(h, "hosts", 2, b);
    await stopWatcher(b);
    for (const r of ended) {
      expect(r.status).toBe("completed");
      expect(r.attempts).toBe(2);
      const history = await h.rows.all<{ previous_status: string | null; status: string; reason_code: string }>(
        "SELECT previous_status, status, reason_code FROM status_transitions WHERE entity_id = ? ORDER BY seq",
        r.id,
      );
      expect(history.map((t) => `${t.status}:${t.reason_code}`)).toEqual([
        "queued:schedule.queued.created",
        "running:schedule.running.leased",
        "queued:run.queued.lease_expired",
        "running:schedule.running.leased",
        "completed:run.completed.ok",
      ]);
    }
  }, 120_000);

  test("a run whose lease expired as often as lease_attempts allows fails with run.failed.lease_attempts_exhausted", async () => {
    const h = newHome();
    expect((await li(["queue", "set", "once", "--lease-attempts=1"], { home: h.home })).code).toBe(0);
    const id = await submit(h, ["--queue", "once"], ["sh", "-c", "exec sleep 600"]);
    const a = startWatcher(h, { LI_HOST_ID: "host-a" });
    const leased = await until("the run leased with its leg linked", async () => {
      const r = await run(h, id);
      return r.status === "running" && r.session_id !== null ? r : null;
    });
    a.proc.kill("SIGKILL");
    await a.proc.exited;
    await killLegOf(h, leased.session_id!);
    await h.rows.run("UPDATE schedule_runs SET lease_expires_at = lease_expires_at - 3600 WHERE id = ?", id);
    expect((await li(["watch", "--once"], { home: h.home, env: { LI_HOST_ID: "host-b" } })).code).toBe(0);
    const r = await run(h, id);
    expect([r.status, r.status_reason_code, r.attempts]).toEqual(["failed", "run.failed.lease_attempts_exhausted", 1]);
  }, 60_000);
});

describe("dependencies", () => {
  test("--after: a chain of successes runs in order", async () => {
    const h = newHome();
    expect((await li(["queue", "set", "deps", "--parallel=0"], { home: h.home })).code).toBe(0);
    const a = await submit(h, ["--queue", "deps"], ["sh", "-c", "sleep 0.2"]);
    const b = await submit(h, ["--queue", "deps", "--after", a], ["true"]);
    const c = await submit(h, ["--queue", "deps", "--after", b], ["true"]);
    expect((await run(h, b)).status).toBe("waiting_dependency");
    const w = startWatcher(h);
    const all = await untilAllTerminal(h, "deps", 3, w);
    await stopWatcher(w);
    expect(all.map((r) => r.status)).toEqual(["completed", "completed", "completed"]);
    const [ra, rb, rc] = [await run(h, a), await run(h, b), await run(h, c)];
    expect(ra.started_at! < rb.started_at! && rb.started_at! < rc.started_at!).toBe(true);
  }, 60_000);

  test("--after: a failed dependency skips its dependents, transitively, naming the dependency and its status", async () => {
    const h = newHome();
    expect((await li(["queue", "set", "fails", "--parallel=0"], { home: h.home })).code).toBe(0);
    const x = await submit(h, ["--queue", "fails"], ["false"]);
    const y = await submit(h, ["--queue", "fails", "--after", x], ["true"]);
    const z = await submit(h, ["--queue", "fails", "--after", y], ["true"]);
    const w = startWatcher(h);
    await untilAllTerminal(h, "fails", 3, w);
    await stopWatcher(w);
    expect((await run(h, x)).status).toBe("failed");
    for (const [id, dep, status] of [[y, x, "failed"], [z, y, "skipped"]] as const) {
      const r = await run(h, id);
      expect([r.status, r.status_reason_code, r.session_id]).toEqual(["skipped", "schedule.skipped.precondition", null]);
      expect(JSON.parse(r.status_evidence_refs!)).toEqual([expect.objectContaining({ kind: "dependency", entity: "schedule_run", id: dep, status })]);
    }
  }, 60_000);

  test("a cycle is refused at submit (exit 2, one line) and nothing is written", async () => {
    const h = newHome();
    const r = await li(["agent", "--detach", "--queue", "q", "--run-id", "self-1", "--after", "self-1", "--", "true"], { home: h.home });
    expect(r.code).toBe(2);
    expect(r.stderr).toBe("li: --after self-1: a cycle (the run would wait for itself)\n");
    expect(await h.rows.exists()).toBe(false);
  });
});

describe("retries", () => {
  test("a command failing twice then succeeding ends completed after 3 attempts, each a chained run; li wait on the first id prints the last attempt's line", async () => {
    const h = newHome();
    const counter = join(h.dir, "count");
    const script = `n=$(cat "${counter}" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "${counter}"; [ $n -ge 3 ]`;
    const first = await submit(h, ["--queue", "flaky", "--retries", "2", "--retry-delay", "50ms", "--retry-backoff", "exp", "--retry-jitter"], ["sh", "-c", script]);
    const w = startWatcher(h);
    const waited = await li(["wait", first, "--timeout", "60"], { home: h.home });
    await stopWatcher(w);
    expect(waited.code).toBe(0);
    expect(waited.stdout).toStartWith(`${first}\tstatus=completed\treason=run.completed.ok\t`);
    const chain = await runs(h, "flaky");
    expect(chain.map((r) => [r.chain_depth, r.status])).toEqual([[0, "retry_wait"], [1, "retry_wait"], [2, "completed"]]);
    expect(chain[1]!.chain_parent_id).toBe(chain[0]!.id);
    expect(chain[2]!.chain_parent_id).toBe(chain[1]!.id);
    expect(chain[0]!.status_reason_code).toBe("schedule.retry_wait.backoff");
    expect(new Set(chain.map((r) => r.session_id)).size).toBe(3);
  }, 90_000);
});

describe("li kill of a scheduled run", () => {
  test("a queued run is cancelled with no process; a running one's leg is stopped and the run ends cancelled", async () => {
    const h = newHome();
    expect((await li(["queue", "set", "k", "--parallel=1"], { home: h.home })).code).toBe(0);
    const long = await submit(h, ["--queue", "k"], ["sh", "-c", "exec sleep 600"]);
    const queued = await submit(h, ["--queue", "k"], ["true"]);
    const w = startWatcher(h);
    await until("the first run's leg to be linked", async () => (await run(h, long)).session_id !== null);
    const k1 = await li(["kill", queued], { home: h.home });
    expect([k1.code, k1.stdout]).toEqual([0, `${queued}: cancelled (run.cancelled.manual_kill)\n`]);
    const k2 = await li(["kill", long], { home: h.home });
    expect(k2.code).toBe(0);
    const all = await untilAllTerminal(h, "k", 2, w);
    await stopWatcher(w);
    expect(all.map((r) => [r.status, r.status_reason_code])).toEqual([
      ["cancelled", "run.cancelled.manual_kill"],
      ["cancelled", "run.cancelled.manual_kill"],
    ]);
    expect((await run(h, queued)).session_id).toBeNull();
    const again = await li(["kill", queued], { home: h.home });
    expect(again.code).toBe(1);
  }, 60_000);
});

describe("the foreground li agent --queue", () => {
  test("with no watcher it waits its turn and runs the leg in the foreground, exiting by its outcome", async () => {
    const h = newHome();
    const r = await li(["agent", "--queue", "fg", "--", "sh", "-c", "echo from-the-leg; exit 3"], { home: h.home, cwd: h.dir });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("from-the-leg\n");
    const [row] = await runs(h, "fg");
    expect([row!.status, row!.status_reason_code, row!.attempts]).toEqual(["failed", "run.failed.exit_nonzero", 1]);
    const session = await h.rows.get<{ status: string; exit_code: number }>("SELECT status, exit_code FROM sessions WHERE id = ?", row!.session_id);
    expect(session).toEqual({ status: "failed", exit_code: 3 });
  }, 60_000);

  test("Ctrl-C while it is queued cancels the run and starts nothing", async () => {
    const h = newHome();
    expect((await li(["queue", "pause", "held"], { home: h.home })).code).toBe(0);
    const marker = join(h.dir, "started");
    const proc = Bun.spawn([LI_BINARY, "agent", "--queue", "held", "--", "sh", "-c", `touch "${marker}"`], { env: liEnv(h.home), cwd: h.dir, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    spawned.push(proc);
    const queued = await until("the foreground run to be queued", async () => {
      const [row] = await runs(h, "held");
      return row?.status === "queued" ? row : null;
    });
    proc.kill("SIGINT");
    expect(await proc.exited).toBe(130);
    const row = await run(h, queued.id);
    expect([row.status, row.status_reason_code, row.session_id]).toEqual(["cancelled", "run.cancelled.sigint", null]);
    expect(Number((await h.rows.get<{ n: number }>("SELECT COUNT(*) AS n FROM legs"))!.n)).toBe(0);
    expect(existsSync(marker)).toBe(false);
    expect(await new Response(proc.stderr).text()).toContain("cancelled (SIGINT while it waited); nothing started");
  }, 60_000);
});

describe("bad input", () => {
  test("an unknown queue option and a negative --parallel are refused with one line, and nothing is written", async () => {
    const h = newHome();
    const unknown = await li(["queue", "set", "q", "--parallel=2", "--slots=4"], { home: h.home });
    expect([unknown.code, unknown.stderr]).toEqual([2, "li: unknown flag --slots for 'li queue set' (see li queue set --help)\n"]);
    const negative = await li(["queue", "set", "q", "--parallel=-1"], { home: h.home });
    expect([negative.code, negative.stderr]).toEqual([2, 'li: --parallel: "-1" is not a whole number of zero or more\n']);
    expect(await h.rows.exists()).toBe(false);
    const short = await li(["agent", "--detach", "--queue", "q", "--lease", "5s", "--", "true"], { home: h.home });
    expect([short.code, short.stderr]).toEqual([2, "li: --lease: at least 30s (the leg renews its lease with its heartbeat, every 15 s)\n"]);
    expect(await h.rows.exists()).toBe(false);
    const stray = await li(["agent", "--retries", "2", "--", "true"], { home: h.home });
    expect([stray.code, stray.stderr]).toEqual([2, "li: --retries needs --queue NAME (it describes a scheduled run)\n"]);
    expect(await h.rows.exists()).toBe(false);
  });

  test("--needs a label no host has: one warning at submit, and the run waits for such a host", async () => {
    const h = newHome();
    writeFileSync(join(h.dir, "labels.yaml"), "");
    const r = await li(["agent", "--detach", "--queue", "gpu", "--needs", "cuda", "--", "true"], { home: h.home });
    expect(r.code).toBe(0);
    expect(r.stderr).toBe("li: warning: --needs cuda: no host has the label (a watcher offers labels with the watch.labels setting); the run waits until one does\n");
    const id = r.stdout.trim();
    expect((await li(["watch", "--once"], { home: h.home })).code).toBe(0);
    expect((await run(h, id)).status).toBe("queued");
  });
});

describe("labels", () => {
  test("a run with --needs is taken only by a watcher whose watch.labels cover it", async () => {
    const h = newHome();
    const first = await li(["agent", "--detach", "--queue", "gpu", "--needs", "cuda", "--", "true"], { home: h.home, cwd: h.dir });
    expect(first.stderr).toContain("--needs cuda: no host has the label");
    const id = first.stdout.trim();
    expect((await li(["watch", "--once"], { home: h.home })).code).toBe(0);
    expect((await run(h, id)).status).toBe("queued");
    // On PostgreSQL nothing has made LI_HOME yet: li wants it owner-only (§18).
    mkdirSync(h.home, { recursive: true, mode: 0o700 });
    writeFileSync(join(h.home, "settings.yaml"), "watch:\n  labels: [cuda, linux]\n", { mode: 0o600 });
    const w = startWatcher(h);
    await untilAllTerminal(h, "gpu", 1, w);
    await stopWatcher(w);
    expect((await run(h, id)).status).toBe("completed");
    // The watcher recorded what it offers: the warning at submit is gone for that label.
    const again = await li(["agent", "--detach", "--queue", "gpu", "--needs", "cuda", "--", "true"], { home: h.home });
    expect([again.code, again.stderr]).toEqual([0, ""]);
  }, 60_000);
});

describe("views", () => {
  test("li ls and li show show queued and waiting runs with their queue, position and what they wait for; the submitter's environment values never", async () => {
    const h = newHome();
    expect((await li(["queue", "pause", "v"], { home: h.home })).code).toBe(0);
    const a = await submit(h, ["--queue", "v"], ["make", "build"]);
    const b = await li(["agent", "--detach", "--queue", "v", "--pass-env", "SECRET_TOKEN", "--", "make", "test"], { home: h.home, cwd: h.dir, env: { SECRET_TOKEN: "hunter2" } });
    const c = await submit(h, ["--queue", "v", "--after", a], ["make", "deploy"]);
    const ls = await li(["ls"], { home: h.home });
    expect(ls.stdout).toContain("[queue v, #1] make build");
    expect(ls.stdout).toContain("[queue v, #2] make test");
    expect(ls.stdout).toContain(`[queue v, waits for ${a.slice(0, 8)}] make deploy`);
    const entities = JSON.parse((await li(["ls", "--json"], { home: h.home })).stdout).entities as { id: string; schedule: { queue: string; position: number | null; waits_for: unknown[] } }[];
    const byId = new Map(entities.map((e) => [e.id, e.schedule]));
    expect(byId.get(a)).toMatchObject({ queue: "v", position: 0, waits_for: [] });
    expect(byId.get(c)).toMatchObject({ queue: "v", position: null, waits_for: [{ kind: "schedule_run", id: a, status: "queued" }] });
    const shown = await li(["show", c], { home: h.home });
    expect(shown.stdout).toContain(`  waits for:  schedule_run ${a} (queued)`);
    expect(shown.stdout).toContain("  queue:      v\n");
    expect((await li(["show", a], { home: h.home })).stdout).toContain("  queue:      v (#1 of the queued; 0 ahead)");
    const json = await li(["show", b.stdout.trim(), "--json", "--raw"], { home: h.home });
    expect(JSON.parse(json.stdout).schedule).toMatchObject({ queue: "v", position: 1, command: ["make", "test"] });
    expect(json.stdout).toContain("SECRET_TOKEN");
    expect(json.stdout).not.toContain("hunter2");
    expect((await li(["show", b.stdout.trim(), "--raw"], { home: h.home })).stdout).not.toContain("hunter2");
  }, 60_000);
});
