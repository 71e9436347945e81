// Setup is one transaction (§8): branch, session, leg row with markers and current_leg_id together or not at all.

import { describe, expect, test } from "bun:test";
import path from "node:path";
import { startHeartbeat } from "../../src/legs/heartbeat.ts";
import { processIdentity } from "../../src/host/proc.ts";
import { allocateRun } from "../../src/legs/rundir.ts";
import { recordCommandMarkers, setupContinuation, setupNewSession, type LegPlan } from "../../src/legs/setup.ts";
import { fakeClock, sequentialIds, tempDir, tempLedger } from "../helpers/ledger.ts";
import { until } from "../helpers/until.ts";

function planFor(legId = "leg-1"): LegPlan {
  const run = allocateRun({ runsRoot: path.join(tempDir(), "runs") });
  return {
    sessionId: "sess-1",
    branchId: "branch-1",
    legId,
    runId: run.runId,
    run,
    argv: ["echo", "hi"],
    cwd: "/tmp",
    startedAt: 1_800_000_000,
    supervisor: processIdentity(),
    contract: { expected: [{ id: "a", path: "a.txt", required: true, description: "", source: "cli" }] },
    invocationId: "inv-1",
    linkedSessionId: null,
  };
}

describe("setupNewSession", () => {
  test("writes the branch, the running session with current_leg_id and markers, and the leg row together", async () => {
    const t = tempLedger({ now: fakeClock().now, newId: sequentialIds() });
    const plan = planFor();
    await setupNewSession(t.ledger, plan);
    const s = (await t.ledger.backend.getEntity("session", "sess-1"))!;
    expect(s).toMatchObject({ status: "running", status_reason_code: "run.started.ok", current_leg_id: "leg-1", invocation_id: "inv-1", artifacts_path: plan.run.artifactRoot });
    expect(JSON.parse(s.artifact_contract_json as string)).toEqual(plan.contract);
    expect(JSON.parse(s.node_metadata as string)).toMatchObject({ leg_id: "leg-1", supervisor_pid: process.pid, boot_id: plan.supervisor.bootId, host_id: plan.supervisor.hostId });
    expect(await t.ledger.backend.getBranch("branch-1")).toMatchObject({ session_id: "sess-1" });
    expect(await t.ledger.backend.getLeg("leg-1")).toMatchObject({ seq: 1, status: "running", pid: process.pid, pid_start_ticks: plan.supervisor.startTicks, heartbeat_at: 1_800_000_000, ended_at: null });
  });

  test("a failure of the hook inside the transaction leaves nothing behind", async () => {
    const t = tempLedger();
    const before = await t.dump();
    await expect(setupNewSession(t.ledger, planFor(), () => { throw new Error("registration failed"); })).rejects.toThrow("registration failed");
    expect(await t.dump()).toEqual(before);
  });

  test("the hook sees the leg's ids and writes in the same transaction", async () => {
    const t = tempLedger();
    let seen: unknown = null;
    await setupNewSession(t.ledger, planFor(), async (tx, ids) => {
      seen = { ...ids };
      expect(await tx.getLeg(ids.legId)).not.toBeNull();
    });
    expect(seen).toMatchObject({ sessionId: "sess-1", branchId: "branch-1", legId: "leg-1" });
  });
});

describe("setupContinuation", () => {
  test("moves current_leg_id to the new leg with a same-status write and inserts its row as seq 2", async () => {
    const t = tempLedger();
    await setupNewSession(t.ledger, planFor());
    expect(await setupContinuation(t.ledger, planFor("leg-2"))).toBeNull();
    expect((await t.ledger.backend.getEntity("session", "sess-1"))!.current_leg_id).toBe("leg-2");
    expect((await t.ledger.backend.listLegs("sess-1")).map((l) => [l.id, l.seq])).toEqual([["leg-1", 1], ["leg-2", 2]]);
    expect((await t.ledger.backend.listTransitions("session", "sess-1")).map((h) => h.status)).toEqual(["running", "running"]);
  });

  test("a session that is no longer running is reported and no leg is added", async () => {
    const t = tempLedger();
    await setupNewSession(t.ledger, planFor());
    await t.ledger.updateStatus("session", "sess-1", { newStatus: "cancelled", reasonCode: "run.cancelled.manual_kill" });
    expect(await setupContinuation(t.ledger, planFor("leg-2"))).toBe("cancelled");
    expect(await t.ledger.backend.listLegs("sess-1")).toHaveLength(1);
  });
});

describe("leg bookkeeping", () => {
  test("the command's markers are recorded on the leg row once it runs; the session's node_metadata waits for a status write", async () => {
    const t = tempLedger();
    await setupNewSession(t.ledger, planFor());
    const before = (await t.ledger.backend.getEntity("session", "sess-1"))!;
    await recordCommandMarkers(t.ledger, "leg-1", { pid: 4242, startTicks: 99 });
    expect(await t.ledger.backend.getLeg("leg-1")).toMatchObject({ command_pid: 4242, command_start_ticks: 99 });
    const after = (await t.ledger.backend.getEntity("session", "sess-1"))!;
    expect([after.node_metadata, after.updated_at]).toEqual([before.node_metadata, before.updated_at]);
  });

  test("a closed leg's row keeps its markers: a late record changes nothing", async () => {
    const t = tempLedger();
    await setupNewSession(t.ledger, planFor());
    await t.ledger.backend.transaction((tx) => tx.updateLeg("leg-1", { ended_at: 1_800_000_009 }));
    await recordCommandMarkers(t.ledger, "leg-1", { pid: 4242, startTicks: 99 });
    expect(await t.ledger.backend.getLeg("leg-1")).toMatchObject({ command_pid: null, command_start_ticks: null });
  });

  test("a heartbeat never moves heartbeat_at backwards: an older beat written after a newer one leaves the newer", async () => {
    const t = tempLedger();
    await setupNewSession(t.ledger, planFor());
    const beat = (at: number) => t.ledger.backend.transaction((tx) => tx.refreshHeartbeat("leg-1", at));
    const heartbeat = async () => (await t.ledger.backend.getLeg("leg-1"))!.heartbeat_at;
    expect(await beat(1_800_000_030.5)).toBe(1);
    expect(await heartbeat()).toBe(1_800_000_030.5);
    // The beat of 15 s earlier commits last (it waited longer for the lock or the connection).
    expect(await beat(1_800_000_015.25)).toBe(0);
    expect(await heartbeat()).toBe(1_800_000_030.5);
    expect(await beat(1_800_000_045)).toBe(1);
    expect(await heartbeat()).toBe(1_800_000_045);
    // A closed leg takes no beat at all.
    await t.ledger.backend.transaction((tx) => tx.updateLeg("leg-1", { ended_at: 1_800_000_050 }));
    expect(await beat(1_800_000_060)).toBe(0);
    expect(await heartbeat()).toBe(1_800_000_045);
  });

  test("the heartbeat refreshes heartbeat_at on its interval, and stops", async () => {
    const t = tempLedger();
    await setupNewSession(t.ledger, planFor());
    // Each beat asks the clock once, so `beats` counts the beats started. On PostgreSQL a beat's round trip
    // can outlast the 10 ms interval under load (the ticks meanwhile start nothing), and one may give up
    // on the lock. So the test follows every beat's write to its end through the backend it hands in.
    let beats = 0;
    const backend = t.ledger.backend;
    const writing = new Set<Promise<unknown>>();
    const tracked: typeof backend = Object.create(backend, {
      transaction: {
        value: (...args: Parameters<typeof backend.transaction>) => {
          const write = backend.transaction(...args);
          writing.add(write);
          const settled = () => void writing.delete(write);
          write.then(settled, settled);
          return write;
        },
      },
    });
    const stop = startHeartbeat(tracked, "leg-1", { intervalMs: 10, now: () => 1_800_000_000 + 15 * ++beats });
    const heartbeat = async () => (await backend.getLeg("leg-1"))!.heartbeat_at ?? 0;
    await until("three heartbeats to be written", async () => (await heartbeat()) >= 1_800_000_045);
    stop();
    const started = beats;
    await Bun.sleep(50); // a window of five intervals in which a beat would start: none may
    expect(beats).toBe(started);
    // Beats started before stop() may still be writing: they end, and what lands is one of theirs, no later one.
    await until("every beat started before stop() to end", () => writing.size === 0);
    const last = (await heartbeat()) - 1_800_000_000;
    expect(last % 15).toBe(0);
    expect(last / 15).toBeGreaterThanOrEqual(3);
    expect(last / 15).toBeLessThanOrEqual(started);
    expect(beats).toBe(started);
  });
});
