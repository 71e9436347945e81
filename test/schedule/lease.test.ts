import { describe, expect, test } from "bun:test";
import { leaseNext, type Lessee } from "../../src/schedule/lease.ts";
import { setQueue } from "../../src/schedule/queues.ts";
import { expireLeases } from "../../src/schedule/expiry.ts";
import { submitRun } from "../../src/schedule/submit.ts";
import { fakeClock, tempLedger, type TempLedger } from "../helpers/ledger.ts";

const request = { version: 1 as const, argv: ["true"], workdir: "/tmp", env: {}, options: {} };
const hostA: Lessee = { hostId: "host-a", labels: ["gpu"] };
const hostB: Lessee = { hostId: "host-b", labels: [] };

function ledger(): { t: TempLedger; clock: ReturnType<typeof fakeClock> } {
  const clock = fakeClock();
  return { t: tempLedger({ now: clock.now }), clock };
}

describe("leasing", () => {
  test("oldest first, within the queue's limit per host; a paused queue leases nothing; --needs only on a host with the label", async () => {
    const { t, clock } = ledger();
    await setQueue(t.ledger, "q", { parallel: 1 });
    const first = await submitRun(t.ledger, { queue: "q", request });
    clock.advance(1);
    const second = await submitRun(t.ledger, { queue: "q", request });
    clock.advance(1);
    const gpu = await submitRun(t.ledger, { queue: "q", request, needs: ["gpu"] });
    expect((await leaseNext(t.ledger, "q", hostB))!.id).toBe(first.id);
    expect(await leaseNext(t.ledger, "q", hostB)).toBeNull(); // host-b's one slot is taken
    expect((await leaseNext(t.ledger, "q", hostA))!.id).toBe(second.id); // per host: host-a has its own
    await setQueue(t.ledger, "q", { parallel: 0 });
    expect((await leaseNext(t.ledger, "q", hostB))).toBeNull(); // only the gpu run is left, and host-b lacks the label
    await setQueue(t.ledger, "q", { paused: true });
    expect(await leaseNext(t.ledger, "q", hostA)).toBeNull();
    await setQueue(t.ledger, "q", { paused: false });
    const leased = (await leaseNext(t.ledger, "q", hostA))!;
    expect([leased.id, leased.status, leased.leased_by, leased.attempts, leased.lease_expires_at]).toEqual([gpu.id, "running", "host-a", 1, clock.now() + 60]);
  });

  test("a fleet limit counts every host's running runs", async () => {
    const { t } = ledger();
    await setQueue(t.ledger, "f", { parallel: 1, scope: "fleet" });
    await submitRun(t.ledger, { queue: "f", request });
    await submitRun(t.ledger, { queue: "f", request });
    expect(await leaseNext(t.ledger, "f", hostA)).not.toBeNull();
    expect(await leaseNext(t.ledger, "f", hostB)).toBeNull();
  });

  test("a run's session is linked once, by the host holding its lease; the leg's heartbeat renews the lease", async () => {
    const { t, clock } = ledger();
    const run = await submitRun(t.ledger, { queue: "q", request, leaseSeconds: 30 });
    await leaseNext(t.ledger, "q", hostA);
    const link = (host: string, session: string) => t.ledger.transact(async (tx) => tx.schedule.linkSession(run.id, session, host));
    expect(await link("host-b", "ses-b")).toBe(0);
    expect(await link("host-a", "ses-a")).toBe(1);
    expect(await link("host-a", "ses-other")).toBe(0);
    await t.rows().run(
      "INSERT INTO legs (id, session_id, seq, run_id, state_root, artifact_root, command, started_at, status) VALUES ('leg-a', 'ses-a', 1, 'run-a', '/x', '/x/a', '[]', ?, 'running')",
      clock.now(),
    );
    clock.advance(20);
    await t.ledger.transact(async (tx) => tx.refreshHeartbeat("leg-a", clock.now()));
    expect((await t.ledger.backend.schedule.getRun(run.id))!.lease_expires_at).toBe(clock.now() + 30);
  });

  test("an expired lease goes back to queued with its attempt counted, then fails past lease_attempts", async () => {
    const { t, clock } = ledger();
    await setQueue(t.ledger, "q", { lease_attempts: 2 });
    const run = await submitRun(t.ledger, { queue: "q", request });
    await leaseNext(t.ledger, "q", hostA);
    clock.advance(61);
    expect(await expireLeases(t.ledger, clock.now())).toEqual({ requeued: 1, failed: 0, settled: 0 });
    expect(await t.ledger.backend.schedule.getRun(run.id)).toMatchObject({ status: "queued", status_reason_code: "run.queued.lease_expired", leased_by: null, attempts: 1 });
    await leaseNext(t.ledger, "q", hostB);
    clock.advance(61);
    expect(await expireLeases(t.ledger, clock.now())).toEqual({ requeued: 0, failed: 1, settled: 0 });
    expect(await t.ledger.backend.schedule.getRun(run.id)).toMatchObject({ status: "failed", status_reason_code: "run.failed.lease_attempts_exhausted", attempts: 2 });
  });
});

describe("crash safety", () => {
  test("a leg killed between its session's final write and the run's: the watcher's pass settles the run from the session", async () => {
    const { t } = ledger();
    const run = await submitRun(t.ledger, { queue: "q", request, retries: 0 });
    await leaseNext(t.ledger, "q", hostA);
    const session = await t.ledger.createEntity("session", {});
    await t.ledger.transact(async (tx) => tx.schedule.linkSession(run.id, session.id, "host-a"));
    await t.ledger.updateStatus("session", session.id, { newStatus: "failed", reasonCode: "run.failed.exit_nonzero", extraFields: { exit_code: 4 } });
    const { runSchedulePass, SCHEDULE_STEPS } = await import("../../src/schedule/pass.ts");
    const settle = SCHEDULE_STEPS.filter((s) => s.name === "settle");
    const pass = await runSchedulePass({ ledger: t.ledger, lessee: hostA, startLeg: async () => ({ ok: false, message: "not in this test" }), log: () => {} }, settle);
    expect(pass.counts["settle.settled"]).toBe(1);
    expect(await t.ledger.backend.schedule.getRun(run.id)).toMatchObject({ status: "failed", status_reason_code: "run.failed.exit_nonzero", exit_code: 4 });
  });
});

describe("the pass's order", () => {
  test("a queued run is leased before the pass's other steps read; a slot those steps free is used in the same pass", async () => {
    const { t } = ledger();
    const { runSchedulePass, SCHEDULE_STEPS } = await import("../../src/schedule/pass.ts");
    // q: no limit; its run `ended` holds a leg that ended (the settle step's work) and `fresh` was just queued.
    await setQueue(t.ledger, "q", { parallel: 0 });
    const ended = await submitRun(t.ledger, { queue: "q", request, retries: 0 });
    await leaseNext(t.ledger, "q", hostA);
    const session = await t.ledger.createEntity("session", {});
    await t.ledger.transact(async (tx) => tx.schedule.linkSession(ended.id, session.id, "host-a"));
    await t.ledger.updateStatus("session", session.id, { newStatus: "completed", reasonCode: "run.completed.ok" });
    const fresh = await submitRun(t.ledger, { queue: "q", request });
    // one: one slot, held by a run whose leg ended; `next` waits for that slot.
    await setQueue(t.ledger, "one", { parallel: 1 });
    const holder = await submitRun(t.ledger, { queue: "one", request, retries: 0 });
    await leaseNext(t.ledger, "one", hostA);
    const held = await t.ledger.createEntity("session", {});
    await t.ledger.transact(async (tx) => tx.schedule.linkSession(holder.id, held.id, "host-a"));
    await t.ledger.updateStatus("session", held.id, { newStatus: "completed", reasonCode: "run.completed.ok" });
    const next = await submitRun(t.ledger, { queue: "one", request });

    const order: string[] = [];
    const pass = await runSchedulePass(
      {
        ledger: t.ledger,
        lessee: hostA,
        startLeg: async (run) => {
          order.push(`start ${run.id}`);
          return { ok: true, sessionId: `s-${run.id}` };
        },
        log: (entry) => {
          if (entry.action === "schedule_settle") order.push(`settle ${String(entry.run_id)}`);
        },
      },
      SCHEDULE_STEPS,
    );
    expect(pass.errors).toEqual([]);
    expect(order).toEqual([`start ${fresh.id}`, `settle ${ended.id}`, `settle ${holder.id}`, `start ${next.id}`]);
    expect(pass.counts["dispatch.started"]).toBe(2);
  });

  test("a pass whose other steps change nothing dispatches once", async () => {
    const { t } = ledger();
    const { runSchedulePass, SCHEDULE_STEPS } = await import("../../src/schedule/pass.ts");
    await setQueue(t.ledger, "q", { parallel: 0 });
    const dispatch = SCHEDULE_STEPS.find((s) => s.name === "dispatch")!;
    let dispatches = 0;
    const counted = { ...dispatch, name: "dispatch", run: async (env: Parameters<typeof dispatch.run>[0]) => (dispatches++, dispatch.run(env)) };
    const steps = [...SCHEDULE_STEPS.filter((s) => s.name !== "dispatch"), counted];
    const env = { ledger: t.ledger, lessee: hostA, startLeg: async () => ({ ok: true as const, sessionId: "s" }), log: () => {} };
    await runSchedulePass(env, steps);
    expect(dispatches).toBe(1);
  });
});
