// Two transactions that lock the same two rows in opposite orders deadlock; PostgreSQL aborts one of them
// (SQLSTATE 40P01). PgBackend.transaction runs the aborted one again, so both commit and the caller sees
// no error (SPEC §5: a guarded write fails only for the reasons the contract names).

import { afterEach, expect, test } from "bun:test";
import { pgTestLedger, type PgTestLedger } from "../../helpers/pg-ledger.ts";
import { describePostgres, usePostgresDatabase } from "../../helpers/postgres.ts";

describePostgres("a deadlock between two of li's transactions (PostgreSQL)", () => {
  const db = usePostgresDatabase();
  const opened: PgTestLedger[] = [];
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((t) => t.close()));
  });

  test("the transaction the server aborts is run again, and both writers commit", async () => {
    const t = await pgTestLedger(db);
    opened.push(t);
    const a = t.ledger;
    const b = t.open();
    await a.createEntity("team", { id: "team-a" });
    await a.createEntity("team", { id: "team-b" });

    // Each holds its first row lock until the other has taken its own, then reaches for the other's.
    let held = 0;
    let release!: () => void;
    const bothHeld = new Promise<void>((resolve) => (release = resolve));
    let runs = 0;
    const writer = (ledger: typeof a, first: string, second: string) =>
      ledger.transact(async (tx) => {
        runs++;
        await tx.readStatus("team", first);
        if (++held === 2) release();
        await bothHeld;
        await tx.readStatus("team", second);
        return tx.insertAdminEvent({ id: `${first}-then-${second}-${runs}`, event_type: "probe", entity_type: "team", entity_id: first, actor: null, justification: null, payload: null, created_at: ledger.now() });
      });
    const results = await Promise.allSettled([writer(a, "team-a", "team-b"), writer(b, "team-b", "team-a")]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "fulfilled"]);
    // The deadlock happened and an aborted writer ran again (under load a retry may meet the other once more).
    expect(runs).toBeGreaterThanOrEqual(3);
    const [row] = await t.raw.sql`SELECT count(*)::int AS n FROM admin_events WHERE event_type = 'probe'`;
    expect(row.n).toBe(2);
    b.close();
  });
});
