// The rule that hands out a transition's `seq`, once for both backends: one above the larger of the
// high-water row and the history's MAX(seq), with the high-water row advanced in the same statement.
// MAX(seq) alone is not enough: `li state prune` may delete the newest history rows, and a seq handed out
// again could sit at or below a consumer's watermark, which then never sees the new event (SPEC §9).
// The caller runs it under its backend's seq lock (SQLite's write lock; PostgreSQL's advisory lock), in
// the transaction that inserts the row, so seq order stays commit order and a rollback returns the seq.

/** The dialect's two-argument maximum: SQLite's scalar MAX, PostgreSQL's GREATEST. */
export type Greatest = "MAX" | "GREATEST";

/** The upsert that advances the high water and returns the seq to assign (`{ seq }`; no parameters). */
export function nextSeqStatement(greatest: Greatest): string {
  // The INSERT arm covers a ledger whose row is missing (the migration seeds it, so only by hand).
  return (
    "INSERT INTO seq_high_water (id, seq) VALUES (1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM status_transitions)) " +
    `ON CONFLICT (id) DO UPDATE SET seq = ${greatest}(seq_high_water.seq + 1, excluded.seq) RETURNING seq`
  );
}
