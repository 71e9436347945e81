// Consumer watermarks never skip an event on PostgreSQL (SPEC §14 "seq", issue 11 item 4). A sequence
// value taken at insert could commit after a later one, and a consumer registered in between (its
// watermark: the highest committed seq) would never be owed it. li assigns `seq` under a
// transaction-scoped advisory lock held to commit, so the second inserter demonstrably waits for the
// first, seq order is commit order, and a consumer reading in between is owed both events.

import { afterEach, expect, test } from "bun:test";
import { applyTransition, validateTransition } from "../../../src/ledger/transition.ts";
import { addConsumer, listOwed } from "../../../src/notify/consumers.ts";
import { pgTestLedger, type PgTestLedger } from "../../helpers/pg-ledger.ts";
import { describePostgres, usePostgresDatabase } from "../../helpers/postgres.ts";
import { raceClock, type Interval } from "../../helpers/race.ts";
import { overlapMs, until } from "../../helpers/until.ts";

/** The advisory lock's first key ("li"); the seq lock's second is hashtext(schema || ':seq'). */
const LI_LOCK_NAMESPACE = 0x6c69;
const complete = { newStatus: "completed", reasonCode: "run.completed.ok" };

describePostgres("seq on PostgreSQL is final in commit order (§14)", () => {
  const db = usePostgresDatabase();
  let t: PgTestLedger | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  /** Sessions waiting on a seq lock of this test's schema (the advisory lock's second key is the schema's). */
  const waitersOnSeqLock = async (t: PgTestLedger): Promise<number> => {
    const [row] = await t.raw.sql`
      SELECT count(*)::int AS n FROM pg_locks
      WHERE locktype = 'advisory' AND NOT granted AND classid = ${LI_LOCK_NAMESPACE} AND objid::bigint = (hashtext(${t.schema} || ':seq')::bigint & 4294967295)`;
    return row.n;
  };

  test("the second inserter waits for the first to commit; a consumer registered in between is owed both events, in commit order", async () => {
    t = await pgTestLedger(db);
    for (const id of ["first", "second"]) await t.ledger.createEntity("session", { id });
    const { watermark: before } = await addConsumer(t.ledger, "early");
    const other = t.open();
    const reader = t.open();

    // A: inserts its history row (taking the seq lock) and is held before it commits.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let inserted!: () => void;
    const insertedNow = new Promise<void>((resolve) => (inserted = resolve));
    const a: Interval = { enteredAt: 0, leftAt: 0 };
    const first = t.ledger
      .transact(async (tx, ctx) => {
        a.enteredAt = raceClock();
        const result = await applyTransition(tx, ctx, validateTransition("session", complete), "first");
        inserted();
        await held;
        return result;
      })
      .then((result) => {
        a.leftAt = raceClock();
        return result;
      });
    await insertedNow;

    // B: another connection's write of another session, started while A holds its uncommitted seq.
    const b: Interval = { enteredAt: raceClock(), leftAt: 0 };
    const second = other.transition("session", "second", complete).then((outcome) => {
      b.leftAt = raceClock();
      return outcome;
    });
    await until("the second writer to wait on the seq lock", async () => (await waitersOnSeqLock(t!)) === 1);

    // In between: a consumer registers (its watermark is the highest committed seq) and the early one reads.
    const middle = await addConsumer(reader, "middle");
    expect(middle.watermark).toBe(before);
    expect(await listOwed(reader, "early")).toEqual([]);

    release();
    const [appliedA, outcomeB] = await Promise.all([first, second]);
    if (appliedA.result !== "applied" || outcomeB.result !== "applied") throw new Error(`both writes should apply: ${appliedA.result}, ${outcomeB.result}`);
    // The two transactions overlapped: B started before A committed, and ended after it.
    expect(overlapMs([a, b])).toBeGreaterThan(0);
    const seqA = appliedA.transition.seq;
    const seqB = outcomeB.transition.seq;
    expect(seqB).toBeGreaterThan(seqA);
    expect(seqA).toBeGreaterThan(middle.watermark);

    // Neither consumer skipped A's event, though A inserted first and B could have committed first.
    const events = [appliedA.transition.transitionId, outcomeB.transition.transitionId];
    for (const name of ["early", "middle"]) expect({ name, owed: (await listOwed(reader, name)).map((e) => e.id) }).toEqual({ name, owed: events });
    // Commit order is seq order in the table too.
    const rows = await t.raw.sql`SELECT entity_id, seq FROM status_transitions WHERE terminal_event = 1 ORDER BY seq`;
    expect(rows.map((r: { entity_id: string }) => r.entity_id)).toEqual(["first", "second"]);
  });
});
