// Delivery claims on PostgreSQL (SPEC §9.5, §14): two watchers racing for one delivery never both win;
// an expired claim is taken over and its first claimer's settlement then changes nothing; parallel
// by-hand acks leave one row; exhausted claims are buried, but never one someone holds locked.

import { afterAll, beforeAll, expect, test } from "bun:test";
import type { ReservedSQL } from "bun";
import { connectPg, type PgClient } from "../../../src/ledger/postgres/client.ts";
import { PgNotifyStore } from "../../../src/ledger/postgres/notify.ts";
import { fakeClock } from "../../helpers/ledger.ts";
import { describePostgres, usePostgresDatabase } from "../../helpers/postgres.ts";
import { overlapMs, until } from "../../helpers/until.ts";
import { pgLedgerClient } from "./store-fixtures.ts";

const T0 = 1_800_000_000;
const LEASE = 15;

describePostgres("delivery claims on PostgreSQL (§9.5)", () => {
  const db = usePostgresDatabase();
  // Two pools on one ledger: two watchers, each with its own connections.
  let first: PgClient;
  let second: PgClient;
  const clock = fakeClock(T0);
  let events = 0;

  beforeAll(async () => {
    first = await pgLedgerClient(db);
    second = await connectPg(first.target);
  });
  afterAll(async () => {
    await second.close();
    await first.close();
  });

  /** A terminal event with nothing delivered yet; returns its id. */
  async function freshEvent(): Promise<string> {
    const id = `t-${++events}`;
    await first.sql.unsafe(
      `INSERT INTO status_transitions (id, seq, entity_type, entity_id, status, reason_code, source, created_at, terminal_event)
       VALUES ($1, $2, 'session', 's-1', 'completed', 'session.completed.exit_zero', 'agent', $3, 1)`,
      [id, events, T0],
    );
    return id;
  }

  const delivery = async (tid: string) => (await first.sql.unsafe("SELECT state, attempts, claimed_until, acked_at FROM terminal_deliveries WHERE transition_id = $1", [tid])).map((r: object) => ({ ...r }));

  /** A connection of `client` held for one transaction, with its server pid (to see it wait on a lock). */
  async function openTransaction(client: PgClient): Promise<{ tx: ReservedSQL; pid: number; store: PgNotifyStore; end(how: "COMMIT" | "ROLLBACK"): Promise<void> }> {
    const tx = await client.sql.reserve();
    await tx.unsafe("BEGIN");
    const pid = Number((await tx.unsafe("SELECT pg_backend_pid() AS pid"))[0].pid);
    return {
      tx,
      pid,
      store: PgNotifyStore.on(tx, clock.now),
      async end(how) {
        await tx.unsafe(how);
        tx.release();
      },
    };
  }

  const waitingOnLock = async (pid: number) => (await first.sql.unsafe("SELECT wait_event_type FROM pg_stat_activity WHERE pid = $1", [pid]))[0]?.wait_event_type === "Lock";

  test("a fresh delivery: the second claimer waits for the first's commit, then finds it claimed; one claim, one attempt", async () => {
    const tid = await freshEvent();
    const a = await openTransaction(first);
    const b = await openTransaction(second);
    try {
      const won = await a.store.claim(tid, "h:x", LEASE);
      expect(won).toBe(T0 + LEASE);
      let lost: number | null | undefined;
      const racing = b.store.claim(tid, "h:x", LEASE).then((r) => (lost = r));
      // B's claim is in flight while A's transaction is open: they overlap.
      await until("the second claim to wait on the first's insert", () => waitingOnLock(b.pid));
      expect(lost).toBeUndefined();
      await a.end("COMMIT");
      await racing;
      expect(lost).toBeNull();
    } finally {
      await b.end("COMMIT");
    }
    expect(await delivery(tid)).toEqual([{ state: "claimed", attempts: 1, claimed_until: T0 + LEASE, acked_at: null }]);
  });

  test("an expired claim: one racer takes it over, the other skips the locked row without waiting", async () => {
    const tid = await freshEvent();
    await first.sql.unsafe(`INSERT INTO terminal_deliveries (transition_id, consumer, state, attempts, claimed_until, created_at, updated_at) VALUES ($1, 'h:x', 'claimed', 1, $2, $2, $2)`, [
      tid,
      T0 - 1,
    ]);
    const a = await openTransaction(first);
    try {
      expect(await a.store.claim(tid, "h:x", LEASE)).toBe(T0 + LEASE);
      // A still holds its transaction open: B's answer comes back without waiting for it.
      const b = await openTransaction(second);
      expect(await b.store.claim(tid, "h:x", LEASE)).toBeNull();
      await b.end("COMMIT");
      expect(await delivery(tid)).toEqual([{ state: "claimed", attempts: 1, claimed_until: T0 - 1, acked_at: null }]);
    } finally {
      await a.end("COMMIT");
    }
    expect(await delivery(tid)).toEqual([{ state: "claimed", attempts: 2, claimed_until: T0 + LEASE, acked_at: null }]);
  });

  test("50 rounds of two watchers claiming the same delivery at once: exactly one winner each round, every round overlapped", async () => {
    let overlapped = 0;
    for (let round = 0; round < 50; round++) {
      const tid = await freshEvent();
      const contenders = await Promise.all([openTransaction(first), openTransaction(second)]);
      const finished = [false, false];
      const intervals = contenders.map(() => ({ enteredAt: 0, leftAt: 0 }));
      const results = await Promise.all(
        contenders.map(async (c, i) => {
          intervals[i]!.enteredAt = performance.now();
          const got = await c.store.claim(tid, "h:race", LEASE);
          finished[i] = true;
          // A winner keeps its transaction open until the other claim is in flight against it (waiting on
          // the row) or answered, so the two always contend; then it commits.
          if (got !== null) await until("the other claimer to contend", async () => finished[1 - i] || (await waitingOnLock(contenders[1 - i]!.pid)));
          await c.end("COMMIT");
          intervals[i]!.leftAt = performance.now();
          return got;
        }),
      );
      expect(results.filter((r) => r !== null)).toHaveLength(1);
      if (overlapMs(intervals) > 0) overlapped++;
      expect((await delivery(tid))[0]).toMatchObject({ state: "claimed", attempts: 1 });
    }
    expect(overlapped).toBe(50);
  });

  test("a claim taken over after its lease: the first claimer's settlement changes nothing, the new claimer's settles it", async () => {
    const tid = await freshEvent();
    const store = PgNotifyStore.on(first.sql, clock.now);
    const firstClaim = (await store.claim(tid, "h:x", LEASE))!;
    expect(await store.claim(tid, "h:x", LEASE)).toBeNull(); // live: nobody else takes it
    clock.advance(LEASE + 1);
    try {
      const secondClaim = (await PgNotifyStore.on(second.sql, clock.now).claim(tid, "h:x", LEASE))!;
      expect(secondClaim).toBe(T0 + 2 * LEASE + 1);
      expect(await store.settleClaim(tid, "h:x", firstClaim, { state: "acked" })).toBe(0);
      expect(await delivery(tid)).toEqual([{ state: "claimed", attempts: 2, claimed_until: secondClaim, acked_at: null }]);
      expect(await store.settleClaim(tid, "h:x", secondClaim, { state: "retry", error: "exit 3", retryAfterSeconds: 4 })).toBe(1);
      const [row] = await first.sql.unsafe("SELECT state, last_error, next_attempt_at, claimed_until FROM terminal_deliveries WHERE transition_id = $1", [tid]);
      expect({ ...row }).toEqual({ state: "retry", last_error: "exit 3", next_attempt_at: clock.now() + 4, claimed_until: null });
      // Not due yet: nobody may claim it; due: the next claim counts a third attempt.
      expect(await store.claim(tid, "h:x", LEASE)).toBeNull();
      clock.advance(4);
      expect(await store.claim(tid, "h:x", LEASE)).toBe(clock.now() + LEASE);
      expect((await delivery(tid))[0]).toMatchObject({ state: "claimed", attempts: 3 });
      expect(await store.settleClaim(tid, "h:x", clock.now() + LEASE, { state: "acked" })).toBe(1);
      expect(await delivery(tid)).toEqual([{ state: "acked", attempts: 3, claimed_until: null, acked_at: clock.now() }]);
      // Settled: never claimed again, whatever the clock says.
      clock.advance(10_000);
      expect(await store.claim(tid, "h:x", LEASE)).toBeNull();
    } finally {
      clock.set(T0);
    }
  });

  test("a lease on a clock with sub-second digits: the claimed_until claim returns is the token its settlement matches", async () => {
    const tid = await freshEvent();
    const store = PgNotifyStore.on(first.sql, () => 1_800_000_123.456789);
    const token = (await store.claim(tid, "h:frac", 10.1))!;
    expect(token).toBe(1_800_000_123.456789 + 10.1);
    expect(await store.settleClaim(tid, "h:frac", token, { state: "dead", error: "gave up" })).toBe(1);
    expect((await first.sql.unsafe("SELECT state, last_error FROM terminal_deliveries WHERE transition_id = $1", [tid])).map((r: object) => ({ ...r }))).toEqual([{ state: "dead", last_error: "gave up" }]);
  });

  test("two by-hand acks of one event at once leave one acked row; the second changes nothing", async () => {
    for (const existing of [null, "retry"] as const) {
      const tid = await freshEvent();
      if (existing) {
        await first.sql.unsafe(`INSERT INTO terminal_deliveries (transition_id, consumer, state, attempts, created_at, updated_at) VALUES ($1, 'plain', 'retry', 2, $2, $2)`, [tid, T0]);
      }
      const a = await openTransaction(first);
      const b = await openTransaction(second);
      let secondAck: number | undefined;
      try {
        expect(await a.store.ackByHand(tid, "plain")).toBe(1);
        const racing = b.store.ackByHand(tid, "plain").then((n) => (secondAck = n));
        await until("the second ack to wait on the first", () => waitingOnLock(b.pid));
        expect(secondAck).toBeUndefined();
        await a.end("COMMIT");
        await racing;
      } finally {
        await b.end("COMMIT");
      }
      expect(secondAck).toBe(0);
      expect(await delivery(tid)).toEqual([{ state: "acked", attempts: existing ? 2 : 0, claimed_until: null, acked_at: T0 }]);
    }
  });

  test("exhausted claims that expired are buried; a live one, one with attempts left, and one someone holds locked are not", async () => {
    const [expired, live, attemptsLeft, locked] = [await freshEvent(), await freshEvent(), await freshEvent(), await freshEvent()];
    for (const [tid, attempts, until_] of [
      [expired, 5, T0 - 1],
      [live, 5, T0 + 10],
      [attemptsLeft, 4, T0 - 1],
      [locked, 5, T0 - 1],
    ] as const) {
      await first.sql.unsafe(`INSERT INTO terminal_deliveries (transition_id, consumer, state, attempts, claimed_until, created_at, updated_at) VALUES ($1, 'h:bury', 'claimed', $2, $3, $4, $4)`, [
        tid,
        attempts,
        until_,
        T0 - 100,
      ]);
    }
    // Another watcher holds one of them locked (taking it over or settling it right now).
    const holder = await openTransaction(second);
    await holder.tx.unsafe("SELECT 1 FROM terminal_deliveries WHERE transition_id = $1 FOR UPDATE", [locked]);
    const store = PgNotifyStore.on(first.sql, clock.now);
    expect(await store.buryExhausted(5, "the claim expired")).toBe(1);
    expect((await delivery(expired))[0]).toMatchObject({ state: "dead", claimed_until: null });
    for (const tid of [live, attemptsLeft, locked]) expect((await delivery(tid))[0]).toMatchObject({ state: "claimed" });
    await holder.end("COMMIT");
    expect(await store.buryExhausted(5, "the claim expired")).toBe(1);
    expect((await delivery(locked))[0]).toMatchObject({ state: "dead" });
  });
});
