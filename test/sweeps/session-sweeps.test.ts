import { afterAll, describe, expect, test } from "bun:test";
import { doctor, doctorLine } from "../../src/sweeps/doctor.ts";
import { linkedFinalizer } from "../../src/sweeps/linked.ts";
import { reaper } from "../../src/sweeps/reaper.ts";
import { staleKill, staleKillLine } from "../../src/sweeps/stale-kill.ts";
import { hostEnv } from "../../src/sweeps/sweep.ts";
import { fakeClock, tempLedger } from "../helpers/ledger.ts";
import { deadPid, ELSEWHERE, insertSession, legRow, query, setColumns, startFixture, type RunningFixture } from "../helpers/sweep-fixtures.ts";
import { isAlive } from "../helpers/until.ts";

const NOW = Math.floor(Date.now() / 1000);
const HOUR = 3600;
const started: RunningFixture[] = [];
afterAll(async () => {
  for (const f of started) await f.stop();
});

async function live(): Promise<RunningFixture> {
  const f = await startFixture("forever");
  started.push(f);
  return f;
}

function setup() {
  const clock = fakeClock(NOW);
  const t = tempLedger({ now: clock.now });
  const status = async (id: string) => (await query<{ status: string; status_reason_code: string }>(t.ledger, "SELECT status, status_reason_code FROM sessions WHERE id = ?", id))[0];
  return { ...t, clock, status };
}

describe("ADR-0105 Verification 4: one sweep judges the process, not the age", () => {
  test("past the threshold, a live supervisor is left alone while a gone one and a reused pid are swept, in the same run", async () => {
    const { ledger, status } = setup();
    const alive = await live();
    const gone = await deadPid();
    const old = NOW - 48 * HOUR;
    await insertSession(ledger, { id: "s-alive", startedAt: old, updatedAt: old, legs: [{ id: "l-alive", pid: alive.pid, pidStartTicks: alive.startTicks, startedAt: old, heartbeatAt: old }] });
    await insertSession(ledger, { id: "s-gone", startedAt: old, updatedAt: old, legs: [{ id: "l-gone", pid: gone.pid, pidStartTicks: gone.startTicks, startedAt: old, heartbeatAt: old }] });
    await insertSession(ledger, { id: "s-reused", startedAt: old, updatedAt: old, legs: [{ id: "l-reused", pid: alive.pid, pidStartTicks: alive.startTicks + 1, startedAt: old, heartbeatAt: old }] });

    const summary = await doctor.runOnce(ledger, NOW, doctor.validate({}), hostEnv());

    expect(doctorLine(summary, "aborted")).toBe("running=3, swept=2 → aborted, skipped_recent=0, skipped_live=1");
    expect((await status("s-alive"))!.status).toBe("running");
    expect(await status("s-gone")).toEqual({ status: "aborted", status_reason_code: "session.stale.no_heartbeat" });
    expect(await status("s-reused")).toEqual({ status: "aborted", status_reason_code: "session.stale.no_heartbeat" });
    expect(isAlive(alive.pid)).toBe(true);
    // The swept session's leg row is closed in the same write.
    expect((await query<{ status: string; ended_at: number }>(ledger, "SELECT status, ended_at FROM legs WHERE id = 'l-gone'"))[0]).toEqual({ status: "aborted", ended_at: NOW });
  });

  test("the reaper and kill --all-stale make the same three judgements", async () => {
    for (const sweep of ["reaper", "stale"] as const) {
      const { ledger, status } = setup();
      const alive = await live();
      const gone = await deadPid();
      const old = NOW - 48 * HOUR;
      await insertSession(ledger, { id: "s-alive", startedAt: old, updatedAt: old, legs: [{ id: "a", pid: alive.pid, pidStartTicks: alive.startTicks, startedAt: old }] });
      await insertSession(ledger, { id: "s-gone", startedAt: old, updatedAt: old, legs: [{ id: "g", pid: gone.pid, pidStartTicks: gone.startTicks, startedAt: old }] });
      await insertSession(ledger, { id: "s-reused", startedAt: old, updatedAt: old, legs: [{ id: "r", pid: alive.pid, pidStartTicks: alive.startTicks + 7, startedAt: old }] });
      const summary = sweep === "reaper" ? await reaper.runOnce(ledger, NOW, reaper.validate({})) : await staleKill.runOnce(ledger, NOW, staleKill.validate({}));
      expect([summary.swept, summary.skipped_live]).toEqual([2, 1]);
      const expected = sweep === "reaper" ? { status: "failed", status_reason_code: "session.phantom.process_dead" } : { status: "cancelled", status_reason_code: "run.cancelled.stale_auto" };
      expect(await status("s-gone")).toEqual(expected);
      expect(await status("s-reused")).toEqual(expected);
      expect((await status("s-alive"))!.status).toBe("running");
      // A reused pid is never signalled: the process that now owns it still runs.
      expect(isAlive(alive.pid)).toBe(true);
    }
  });
});

describe("li state doctor", () => {
  test("rows without markers are swept once their last update passes the threshold, with the chosen status", async () => {
    const { ledger, status } = setup();
    await insertSession(ledger, { id: "bare-old", startedAt: NOW - 30 * HOUR, updatedAt: NOW - 30 * HOUR });
    await insertSession(ledger, { id: "bare-young", startedAt: NOW - 30 * HOUR, updatedAt: NOW - 2 * HOUR });
    const summary = await doctor.runOnce(ledger, NOW, doctor.validate({ newStatus: "failed" }));
    expect(doctorLine(summary, "failed")).toBe("running=2, swept=1 → failed, skipped_recent=1, skipped_live=0");
    expect(await status("bare-old")).toEqual({ status: "failed", status_reason_code: "session.stale.no_heartbeat" });
    expect((await status("bare-young"))!.status).toBe("running");
  });

  test("a leg of another host is judged by its heartbeat: stale past the threshold is swept, a fresh one is live", async () => {
    const { ledger, status } = setup();
    await insertSession(ledger, { id: "far-stale", startedAt: NOW - 48 * HOUR, updatedAt: NOW - 48 * HOUR, legs: [{ id: "a", hostId: ELSEWHERE, pid: 77, pidStartTicks: 1, startedAt: NOW - 48 * HOUR, heartbeatAt: NOW - 30 * HOUR }] });
    await insertSession(ledger, { id: "far-live", startedAt: NOW - 48 * HOUR, updatedAt: NOW - 48 * HOUR, legs: [{ id: "b", hostId: ELSEWHERE, pid: 77, pidStartTicks: 1, startedAt: NOW - 48 * HOUR, heartbeatAt: NOW - 20 }] });
    const summary = await doctor.runOnce(ledger, NOW, doctor.validate({}));
    expect([summary.swept, summary.skipped_live]).toEqual([1, 1]);
    expect((await status("far-stale"))!.status).toBe("aborted");
    expect((await status("far-live"))!.status).toBe("running");
  });
});

describe("a resumed session is aged from its current leg, never from started_at", () => {
  const firstStart = NOW - 10 * 24 * HOUR;

  test("a live young leg of a ten-day-old session is not swept by doctor, kill --all-stale or the reaper", async () => {
    const { ledger, status } = setup();
    const alive = await live();
    await insertSession(ledger, {
      id: "resumed",
      startedAt: firstStart,
      updatedAt: NOW - 120,
      legs: [
        { id: "first", startedAt: firstStart, endedAt: firstStart + 60, status: "completed", pid: 1, pidStartTicks: 1 },
        { id: "second", startedAt: NOW - 120, heartbeatAt: NOW - 10, pid: alive.pid, pidStartTicks: alive.startTicks },
      ],
    });
    const d = await doctor.runOnce(ledger, NOW, doctor.validate({ staleHours: 1 }));
    const k = await staleKill.runOnce(ledger, NOW, staleKill.validate({ thresholdSeconds: 60 }));
    const r = await reaper.runOnce(ledger, NOW, reaper.validate({}));
    expect([d.skipped_live, k.skipped_live, r.skipped_live]).toEqual([1, 1, 1]);
    expect((await status("resumed"))!.status).toBe("running");
  });

  test("a young leg whose supervisor just died is not yet swept by any of them either", async () => {
    const { ledger, status } = setup();
    const gone = await deadPid();
    await insertSession(ledger, {
      id: "resumed",
      startedAt: firstStart,
      updatedAt: NOW - 30,
      legs: [{ id: "second", startedAt: NOW - 30, pid: gone.pid, pidStartTicks: gone.startTicks }],
    });
    const d = await doctor.runOnce(ledger, NOW, doctor.validate({}));
    const k = await staleKill.runOnce(ledger, NOW, staleKill.validate({}));
    const r = await reaper.runOnce(ledger, NOW, reaper.validate({}));
    expect([d.skipped_recent, k.skipped_recent, r.skipped_recent]).toEqual([1, 1, 1]);
    expect([d.swept, k.swept, r.swept]).toEqual([0, 0, 0]);
    expect((await status("resumed"))!.status).toBe("running");
  });
});

describe("a session with any live unended leg is alive (§12.1)", () => {
  test("an older leg that still runs keeps the session from doctor, kill --all-stale and the reaper, though its current leg is dead and old", async () => {
    const { ledger, status } = setup();
    const alive = await live();
    const gone = await deadPid();
    const old = NOW - 48 * HOUR;
    await insertSession(ledger, {
      id: "raced",
      startedAt: old,
      updatedAt: old,
      legs: [
        { id: "older", startedAt: old, heartbeatAt: old, pid: alive.pid, pidStartTicks: alive.startTicks },
        { id: "current", startedAt: old, heartbeatAt: old, pid: gone.pid, pidStartTicks: gone.startTicks },
      ],
    });
    const d = await doctor.runOnce(ledger, NOW, doctor.validate({}));
    const k = await staleKill.runOnce(ledger, NOW, staleKill.validate({}));
    const r = await reaper.runOnce(ledger, NOW, reaper.validate({}));
    expect([d.skipped_live, k.skipped_live, r.skipped_live]).toEqual([1, 1, 1]);
    expect([d.swept, k.swept, r.swept]).toEqual([0, 0, 0]);
    expect((await status("raced"))!.status).toBe("running");
    expect(isAlive(alive.pid)).toBe(true);
  });
});

describe("a sweep re-checks inside its write what it judged outside", () => {
  async function judgedDead() {
    const t = setup();
    const gone = await deadPid();
    const old = NOW - 48 * HOUR;
    await insertSession(t.ledger, { id: "s", startedAt: old, updatedAt: old, legs: [{ id: "l1", pid: gone.pid, pidStartTicks: gone.startTicks, startedAt: old, heartbeatAt: old }] });
    return t;
  }

  test("a heartbeat that lands between the decision and the write keeps the session running", async () => {
    const { ledger, status } = await judgedDead();
    const env = hostEnv({ hooks: { beforeWrite: async (id) => await setColumns(ledger, "legs", "l1", { heartbeat_at: NOW }) } });
    const summary = await doctor.runOnce(ledger, NOW, doctor.validate({}), env);
    expect(summary.swept).toBe(0);
    expect(summary.conflicts).toBe(1);
    expect(summary.actions[0]!.conflict).toBe("heartbeat_changed");
    expect((await status("s"))!.status).toBe("running");
    expect((await query(ledger, "SELECT * FROM status_transitions WHERE entity_id = 's'")).length).toBe(1);
  });

  test("a new leg that became current between the decision and the write keeps the session running", async () => {
    const { ledger, status } = await judgedDead();
    const env = hostEnv({
      hooks: {
        beforeWrite: async () => {
          await ledger.transact(async (tx) => {
            await tx.insertLeg(legRow("s", { id: "l2", seq: 2, startedAt: NOW }, 1));
          });
          await setColumns(ledger, "sessions", "s", { current_leg_id: "l2" });
        },
      },
    });
    const summary = await doctor.runOnce(ledger, NOW, doctor.validate({}), env);
    expect(summary.swept).toBe(0);
    expect(summary.actions[0]!.conflict).toBe("leg_changed");
    expect((await status("s"))!.status).toBe("running");
    expect((await query<{ ended_at: number | null }>(ledger, "SELECT ended_at FROM legs WHERE id = 'l2'"))[0]!.ended_at).toBeNull();
  });

  test("without a change in between, the same judgement writes", async () => {
    const { ledger, status } = await judgedDead();
    let called = 0;
    const summary = await doctor.runOnce(ledger, NOW, doctor.validate({}), hostEnv({ hooks: { beforeWrite: () => void called++ } }));
    expect([called, summary.swept, summary.conflicts]).toEqual([1, 1, 0]);
    expect((await status("s"))!.status).toBe("aborted");
  });
});

describe("the phantom reaper", () => {
  test("kills the orphaned command's group, then writes failed with what it saw and killed", async () => {
    const { ledger, status } = setup();
    const gone = await deadPid();
    const orphan = await live();
    await insertSession(ledger, {
      id: "phantom",
      startedAt: NOW - 600,
      updatedAt: NOW - 600,
      legs: [{ id: "l", pid: gone.pid, pidStartTicks: gone.startTicks, commandPid: orphan.pid, commandStartTicks: orphan.startTicks, startedAt: NOW - 600, heartbeatAt: NOW - 120 }],
    });
    const summary = await reaper.runOnce(ledger, NOW, reaper.validate({}));
    expect(summary.swept).toBe(1);
    await orphan.proc.exited;
    expect(isAlive(orphan.pid)).toBe(false);
    expect(await status("phantom")).toEqual({ status: "failed", status_reason_code: "session.phantom.process_dead" });
    const evidence = JSON.parse((await query<{ status_evidence_refs: string }>(ledger, "SELECT status_evidence_refs FROM sessions WHERE id = 'phantom'"))[0]!.status_evidence_refs);
    expect(evidence[0]).toMatchObject({ kind: "liveness", pid: gone.pid, supervisor: "dead", command_pid: orphan.pid, command: "alive" });
    expect(evidence[1]).toMatchObject({ kind: "killed", what: "command_group", pgid: orphan.pid, signal: "SIGKILL" });
  });

  // Issue 10 / §18: a pid without start ticks is no identity: neither judged dead (a phantom) nor ever signalled.
  test("pids without start ticks are unknown: not reaped as phantoms, their command never killed; only the age rule applies", async () => {
    const { ledger, status } = setup();
    const stranger = await live();
    const gone = await deadPid();
    const refuse = (target: number): boolean => {
      throw new Error(`the reaper signalled ${target}`);
    };
    await insertSession(ledger, { id: "unverified", startedAt: NOW - 600, updatedAt: NOW - 600, legs: [{ id: "l1", pid: stranger.pid, pidStartTicks: null, startedAt: NOW - 600, heartbeatAt: NOW - 120 }] });
    await insertSession(ledger, {
      id: "orphan-unverified",
      startedAt: NOW - 600,
      updatedAt: NOW - 600,
      legs: [{ id: "l2", pid: gone.pid, pidStartTicks: gone.startTicks, commandPid: stranger.pid, commandStartTicks: null, startedAt: NOW - 600, heartbeatAt: NOW - 120 }],
    });
    const summary = await reaper.runOnce(ledger, NOW, reaper.validate({}), hostEnv({ signalGroup: refuse, signalProcess: refuse }));
    expect((await status("unverified"))!.status).toBe("running");
    expect(await status("orphan-unverified")).toEqual({ status: "failed", status_reason_code: "session.phantom.process_dead" });
    expect([summary.swept, summary.skipped_recent]).toEqual([1, 1]);
    expect(isAlive(stranger.pid)).toBe(true);
    const old = await reaper.runOnce(ledger, NOW + 2 * HOUR, reaper.validate({}), hostEnv({ signalGroup: refuse, signalProcess: refuse }));
    expect(old.swept).toBe(1);
    expect(await status("unverified")).toEqual({ status: "failed", status_reason_code: "session.orphaned.no_process" });
    const summary2 = (await query<{ status_reason_summary: string }>(ledger, "SELECT status_reason_summary FROM sessions WHERE id = 'unverified'"))[0]!;
    expect(summary2.status_reason_summary).toEndWith("with no process markers li can verify");
    expect(isAlive(stranger.pid)).toBe(true);
  });

  test("a dead supervisor inside the phantom grace is left to finish its own teardown", async () => {
    const { ledger, status } = setup();
    const gone = await deadPid();
    await insertSession(ledger, { id: "s", startedAt: NOW - 600, updatedAt: NOW - 600, legs: [{ id: "l", pid: gone.pid, pidStartTicks: gone.startTicks, startedAt: NOW - 600, heartbeatAt: NOW - 20 }] });
    const summary = await reaper.runOnce(ledger, NOW, reaper.validate({}));
    expect([summary.swept, summary.skipped_recent]).toEqual([0, 1]);
    expect((await status("s"))!.status).toBe("running");
  });

  test("sessions without markers are reaped as orphaned only past the phantom hours", async () => {
    const { ledger, status } = setup();
    await insertSession(ledger, { id: "old", startedAt: NOW - 2 * HOUR, updatedAt: NOW - 2 * HOUR });
    await insertSession(ledger, { id: "young", startedAt: NOW - 30 * 60, updatedAt: NOW - 30 * 60 });
    await insertSession(ledger, { id: "resumed-young", startedAt: NOW - 30 * HOUR, updatedAt: NOW - 30 * 60 });
    const summary = await reaper.runOnce(ledger, NOW, reaper.validate({}));
    expect([summary.swept, summary.skipped_recent]).toEqual([1, 2]);
    expect(await status("old")).toEqual({ status: "failed", status_reason_code: "session.orphaned.no_process" });
    expect((await status("young"))!.status).toBe("running");
    expect((await status("resumed-young"))!.status).toBe("running");
  });

  test("a session held by a running linked session is alive; once the linked one ends it is judged again", async () => {
    const { ledger, status } = setup();
    const gone = await deadPid();
    await insertSession(ledger, { id: "linked", startedAt: NOW - 600, updatedAt: NOW - 600 });
    await insertSession(ledger, { id: "held", linkedSessionId: "linked", startedAt: NOW - 600, updatedAt: NOW - 600, legs: [{ id: "l", pid: gone.pid, pidStartTicks: gone.startTicks, startedAt: NOW - 600, heartbeatAt: NOW - 600, endedAt: NOW - 590, status: "failed" }] });
    const first = await reaper.runOnce(ledger, NOW, reaper.validate({ phantomHours: 100 }));
    expect(first.skipped_live).toBe(1);
    expect((await status("held"))!.status).toBe("running");
    await ledger.transition("session", "linked", { newStatus: "completed", reasonCode: "run.completed.ok" });
    const second = await reaper.runOnce(ledger, NOW, reaper.validate({ phantomHours: 100 }));
    expect(second.swept).toBe(1);
    expect((await status("held"))!.status).toBe("failed");
  });
});

describe("a session held for its linked session (§8.2 step 5)", () => {
  test("is left to the linked finalizer, not reaped, when its linked session has just ended", async () => {
    const { ledger, status } = setup();
    const gone = await deadPid();
    await insertSession(ledger, { id: "linked", startedAt: NOW - 600, updatedAt: NOW - 600 });
    await insertSession(ledger, { id: "held", linkedSessionId: "linked", startedAt: NOW - 600, updatedAt: NOW - 600, legs: [{ id: "l", pid: gone.pid, pidStartTicks: gone.startTicks, startedAt: NOW - 600, heartbeatAt: NOW - 600, endedAt: NOW - 590, status: "failed" }] });
    // The hold teardown leaves (its reason column, as the leg's guarded write sets it).
    await setColumns(ledger, "sessions", "held", { status_reason_code: "session.running.linked_pending" });
    await ledger.transition("session", "linked", { newStatus: "completed", reasonCode: "run.completed.ok" });
    const pass = await reaper.runOnce(ledger, NOW, reaper.validate({ phantomHours: 100 }));
    expect(pass.swept).toBe(0);
    expect((await status("held"))!.status).toBe("running");
  });
});

describe("a held session whose later leg died unended", () => {
  test("is alive while its linked session runs; once that one ends the finalizer leaves it and the reaper writes it", async () => {
    const { ledger, status } = setup();
    const gone = await deadPid();
    await insertSession(ledger, { id: "linked", startedAt: NOW - 600, updatedAt: NOW - 600 });
    await insertSession(ledger, {
      id: "held",
      linkedSessionId: "linked",
      startedAt: NOW - 600,
      updatedAt: NOW - 600,
      legs: [
        { id: "first", startedAt: NOW - 600, endedAt: NOW - 590, status: "failed" },
        // A resume took over the held session, then its li was killed: the leg never closed its row.
        { id: "resume", pid: gone.pid, pidStartTicks: gone.startTicks, startedAt: NOW - 500, heartbeatAt: NOW - 500 },
      ],
    });
    await setColumns(ledger, "sessions", "held", { status_reason_code: "session.running.linked_pending" });

    expect((await reaper.runOnce(ledger, NOW, reaper.validate({}))).skipped_live).toBe(1);
    await ledger.transition("session", "linked", { newStatus: "completed", reasonCode: "run.completed.ok" });
    const linked = await linkedFinalizer.runOnce(ledger, NOW, linkedFinalizer.validate({}));
    const reaped = await reaper.runOnce(ledger, NOW, reaper.validate({}));

    expect(linked.finalized).toBe(0);
    expect(reaped.swept).toBe(1);
    expect(await status("held")).toEqual({ status: "failed", status_reason_code: "session.phantom.process_dead" });
  });
});

describe("li kill --all-stale as a sweep", () => {
  test("legs of other hosts and legs without markers are skipped and counted; a dry run writes nothing", async () => {
    const { ledger, status, dump } = setup();
    const gone = await deadPid();
    const old = NOW - 5 * HOUR;
    await insertSession(ledger, { id: "remote", startedAt: old, updatedAt: old, legs: [{ id: "r", hostId: ELSEWHERE, pid: 4242, pidStartTicks: 1, startedAt: old, heartbeatAt: old }] });
    await insertSession(ledger, { id: "bare", startedAt: old, updatedAt: old });
    await insertSession(ledger, { id: "dead", startedAt: old, updatedAt: old, legs: [{ id: "d", pid: gone.pid, pidStartTicks: gone.startTicks, startedAt: old }] });
    const before = await dump();
    const dry = await staleKill.runOnce(ledger, NOW, staleKill.validate({ dryRun: true }));
    expect(await dump()).toEqual(before);
    expect(staleKillLine(dry)).toBe("running=3, killed=1 → cancelled, skipped_recent=0, skipped_live=0, skipped_remote=1, skipped_no_markers=1");
    const real = await staleKill.runOnce(ledger, NOW, staleKill.validate({}));
    expect(staleKillLine(real)).toBe(staleKillLine(dry));
    expect((await status("dead"))!.status).toBe("cancelled");
    expect((await status("remote"))!.status).toBe("running");
    expect((await status("bare"))!.status).toBe("running");
  });

  test("bad options are usage errors naming the flag", () => {
    expect(() => staleKill.validate({ thresholdSeconds: -1 })).toThrow(/--threshold/);
    expect(() => doctor.validate({ newStatus: "completed" as never })).toThrow(/--new-status/);
    expect(() => reaper.validate({ phantomHours: 0 })).toThrow(/--phantom-hours/);
  });
});
