import { afterAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { Ledger } from "../../src/ledger/ledger.ts";
import type { AppliedTransition } from "../../src/ledger/transition.ts";
import { readStartTicks } from "../../src/host/proc.ts";
import { killSession, KillRefusedError } from "../../src/sweeps/kill.ts";
import { hostEnv } from "../../src/sweeps/sweep.ts";
import { UsageError } from "../../src/util/errors.ts";
import { rowsOf, tempLedger } from "../helpers/ledger.ts";
import { deadPid, ELSEWHERE, HERE, insertSession, query, startFixture, type RunningFixture } from "../helpers/sweep-fixtures.ts";
import { isAlive } from "../helpers/until.ts";
import { testSqliteOnly } from "../helpers/backends.ts";

const started: RunningFixture[] = [];
afterAll(async () => {
  for (const f of started) await f.stop();
});
async function live(name: "forever" | "ignore-sigterm" = "forever"): Promise<RunningFixture> {
  const f = await startFixture(name);
  started.push(f);
  return f;
}

const now = () => Date.now() / 1000;
/** A signal sender that fails the test: the cases using it must never reach kill(2). */
const refuse = (target: number, signal: NodeJS.Signals): boolean => {
  throw new Error(`li kill signalled ${target} with ${signal}`);
};

function setup() {
  const t = tempLedger();
  const pushed: AppliedTransition[] = [];
  const deps = { pushTerminal: async (_l: Ledger, e: AppliedTransition) => void pushed.push(e), pollMs: 10 };
  const row = async (id: string) => (await query<{ status: string; status_reason_code: string; status_evidence_refs: string | null }>(t.ledger, "SELECT status, status_reason_code, status_evidence_refs FROM sessions WHERE id = ?", id))[0]!;
  return { ...t, pushed, deps, row };
}

describe("li kill ID", () => {
  test("a live leg is asked to stop and finalizes itself cancelled/manual_kill within the grace; li kill writes nothing itself", async () => {
    const { ledger, liHome, deps, pushed, row } = setup();
    const t = now();
    await insertSession(ledger, { id: "s", startedAt: t - 60, updatedAt: t - 60, legs: [{ id: "l", startedAt: t - 60, heartbeatAt: t - 5 }] });
    // env: process.env carries the suite's backend (test/helpers/backends.ts) to the stand-in.
    const supervisor = Bun.spawn([process.execPath, join(import.meta.dir, "workers/supervisor.ts"), liHome, "s", "l"], { env: process.env, stdout: "pipe", stderr: "inherit" });
    await supervisor.stdout.getReader().read(); // "ready"
    await rowsOf(ledger).run("UPDATE legs SET pid = ?, pid_start_ticks = ?, host_id = ? WHERE id = 'l'", supervisor.pid, readStartTicks(supervisor.pid), HERE);

    const result = await killSession(ledger, "s", { graceSeconds: 10 }, deps);

    expect(result.action).toBe("terminated");
    expect(await row("s")).toMatchObject({ status: "cancelled", status_reason_code: "run.cancelled.manual_kill" });
    expect(result.signals.map((s) => s.signal)).toEqual(["SIGTERM"]);
    expect(await supervisor.exited).toBe(143);
    expect((await query<{ kill_requested_at: number | null }>(ledger, "SELECT kill_requested_at FROM legs WHERE id = 'l'"))[0]!.kill_requested_at).not.toBeNull();
    // The leg pushes its own notice; li kill pushes only what it wrote.
    expect(pushed).toEqual([]);
  });

  test("a leg that ignores SIGTERM is SIGKILLed with its command's group after the grace and written force_kill", async () => {
    const { ledger, deps, pushed, row } = setup();
    const supervisor = await live("ignore-sigterm");
    const command = await live("forever");
    const t = now();
    await insertSession(ledger, { id: "s", startedAt: t - 60, updatedAt: t - 60, legs: [{ id: "l", pid: supervisor.pid, pidStartTicks: supervisor.startTicks, commandPid: command.pid, commandStartTicks: command.startTicks, startedAt: t - 60, heartbeatAt: t - 5 }] });

    const result = await killSession(ledger, "s", { graceSeconds: 0.3, reason: "stuck" }, deps);

    expect(result.action).toBe("force_killed");
    expect(await row("s")).toMatchObject({ status: "cancelled", status_reason_code: "run.cancelled.force_kill" });
    expect(result.signals.map((s) => `${s.target}:${s.signal}`)).toEqual(["supervisor:SIGTERM", "supervisor:SIGKILL", "command_group:SIGKILL"]);
    await supervisor.proc.exited;
    await command.proc.exited;
    expect(isAlive(supervisor.pid)).toBe(false);
    expect(isAlive(command.pid)).toBe(false);
    const evidence = JSON.parse((await row("s")).status_evidence_refs!);
    expect(evidence[1]).toMatchObject({ kind: "force_kill", grace_seconds: 0.3 });
    expect(pushed.map((e) => e.reasonCode)).toEqual(["run.cancelled.force_kill"]);
  });

  test("a leg whose supervisor is dead is written directly and its orphaned command is killed", async () => {
    const { ledger, deps, pushed, row } = setup();
    const gone = await deadPid();
    const command = await live("forever");
    const t = now();
    await insertSession(ledger, { id: "s", startedAt: t - 60, updatedAt: t - 60, legs: [{ id: "l", pid: gone.pid, pidStartTicks: gone.startTicks, commandPid: command.pid, commandStartTicks: command.startTicks, startedAt: t - 60 }] });

    const result = await killSession(ledger, "s", { graceSeconds: 5 }, deps);

    expect(result.action).toBe("written");
    expect(await row("s")).toMatchObject({ status: "cancelled", status_reason_code: "run.cancelled.manual_kill" });
    await command.proc.exited;
    expect(isAlive(command.pid)).toBe(false);
    expect(result.signals).toEqual([expect.objectContaining({ target: "command_group", pid: command.pid, signal: "SIGKILL" })]);
    expect(pushed.length).toBe(1);
    expect((await query<{ status: string }>(ledger, "SELECT status FROM legs WHERE id = 'l'"))[0]!.status).toBe("cancelled");
  });

  test("a recorded pid now used by another process is never signalled", async () => {
    const { ledger, deps, row } = setup();
    const stranger = await live("forever");
    const t = now();
    await insertSession(ledger, { id: "s", startedAt: t - 60, updatedAt: t - 60, legs: [{ id: "l", pid: stranger.pid, pidStartTicks: stranger.startTicks + 3, commandPid: stranger.pid, commandStartTicks: stranger.startTicks + 9, startedAt: t - 60 }] });

    const result = await killSession(ledger, "s", { graceSeconds: 5 }, deps);

    expect(result.action).toBe("written");
    expect(result.signals).toEqual([]);
    expect((await row("s")).status).toBe("cancelled");
    expect(isAlive(stranger.pid)).toBe(true);
  });

  // Today's bug (issue 10): with no start ticks recorded, any live pid was taken for the supervisor and got SIGTERM.
  test("a recorded pid without start ticks is never signalled, supervisor or command: written directly, with a note each", async () => {
    const { ledger, deps, row } = setup();
    const stranger = await live("ignore-sigterm");
    const t = now();
    await insertSession(ledger, { id: "s", startedAt: t - 60, updatedAt: t - 60, legs: [{ id: "l", pid: stranger.pid, pidStartTicks: null, commandPid: stranger.pid, commandStartTicks: null, startedAt: t - 60, heartbeatAt: t - 1 }] });

    const result = await killSession(ledger, "s", { graceSeconds: 0.2 }, { ...deps, env: hostEnv({ signalProcess: refuse, signalGroup: refuse }) });

    expect(result.action).toBe("written");
    expect(result.signals).toEqual([]);
    expect(result.notes).toEqual([
      `the recorded supervisor pid ${stranger.pid} has no start ticks to match; it was not signalled`,
      `the recorded command pid ${stranger.pid} has no start ticks to match; it was not signalled`,
    ]);
    expect(await row("s")).toMatchObject({ status: "cancelled", status_reason_code: "run.cancelled.manual_kill" });
    expect(isAlive(stranger.pid)).toBe(true);
  });

  test("a recorded pid beyond any process id (99999999999) is no identity: never signalled, one note, no type error", async () => {
    const { ledger, deps, row } = setup();
    const t = now();
    await insertSession(ledger, { id: "s", startedAt: t - 60, updatedAt: t - 60, legs: [{ id: "l", pid: 99_999_999_999, pidStartTicks: 5, startedAt: t - 60, heartbeatAt: t - 1 }] });

    const result = await killSession(ledger, "s", { graceSeconds: 0.1 }, { ...deps, env: hostEnv({ signalProcess: refuse, signalGroup: refuse }) });

    expect(result.signals).toEqual([]);
    expect(result.notes).toEqual(["the recorded supervisor pid 99999999999 is not a valid process id; it was not signalled"]);
    expect((await row("s")).status).toBe("cancelled");
  });

  test("a leg here that heartbeats but recorded no pid gets the request and the grace, then is written force_kill with nothing signalled", async () => {
    const { ledger, deps, pushed, row } = setup();
    const t = now();
    await insertSession(ledger, { id: "s", startedAt: t - 60, updatedAt: t - 60, legs: [{ id: "l", hostId: HERE, startedAt: t - 60, heartbeatAt: t - 5 }] });

    const result = await killSession(ledger, "s", { graceSeconds: 0.2 }, deps);

    expect([result.action, result.signals]).toEqual(["force_killed", []]);
    expect(await row("s")).toMatchObject({ status: "cancelled", status_reason_code: "run.cancelled.force_kill" });
    expect((await query<{ kill_requested_at: number | null }>(ledger, "SELECT kill_requested_at FROM legs WHERE id = 'l'"))[0]!.kill_requested_at).not.toBeNull();
    expect(pushed.length).toBe(1);
  });

  test("a session without markers is written cancelled directly", async () => {
    const { ledger, deps, row } = setup();
    await insertSession(ledger, { id: "bare", startedAt: now(), updatedAt: now() });
    const result = await killSession(ledger, "bare", { graceSeconds: 5 }, deps);
    expect([result.action, (await row("bare")).status, (await row("bare")).status_reason_code]).toEqual(["written", "cancelled", "run.cancelled.manual_kill"]);
  });

  /** Each target refused with exit 1 and the message, the ledger unchanged. */
  async function expectRefused(ledger: Ledger, deps: ReturnType<typeof setup>["deps"], dump: () => Promise<unknown>, cases: readonly (readonly [string, RegExp])[]): Promise<void> {
    const before = await dump();
    for (const [id, message] of cases) {
      const error = await killSession(ledger, id, { graceSeconds: 5 }, deps).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(KillRefusedError);
      expect((error as KillRefusedError).exitCode).toBe(1);
      expect((error as Error).message).toMatch(message);
    }
    expect(await dump()).toEqual(before);
  }

  test("a terminal target is refused with exit 1 and nothing changes", async () => {
    const { ledger, deps, dump } = setup();
    await insertSession(ledger, { id: "done", startedAt: now(), updatedAt: now() });
    await ledger.transition("session", "done", { newStatus: "completed", reasonCode: "run.completed.ok" });
    await expectRefused(ledger, deps, dump, [["done", /already completed/]]);
  });

  test("an unknown id is a usage error (exit 2) in the wording every command uses, and nothing changes", async () => {
    const { ledger, deps, dump } = setup();
    const before = await dump();
    const error = await killSession(ledger, "nope", { graceSeconds: 5 }, deps).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UsageError);
    expect(error).not.toBeInstanceOf(KillRefusedError);
    expect((error as UsageError).exitCode).toBe(2);
    expect((error as Error).message).toBe("no run, session or branch matches 'nope'");
    expect(await dump()).toEqual(before);
  });

  testSqliteOnly("remote-kill-refused")("a leg of another host is refused with exit 1 naming its host, and nothing changes", async () => {
    const { ledger, deps, dump } = setup();
    await insertSession(ledger, { id: "remote", startedAt: now(), updatedAt: now(), legs: [{ id: "r", hostId: ELSEWHERE, pid: 4242, pidStartTicks: 1, startedAt: now(), heartbeatAt: now() }] });
    await expectRefused(ledger, deps, dump, [["remote", /another-machine.*run li kill there/]]);
  });
});
