// Rows as PostgreSQL hands them to li's types. Bun returns bigint (int8) columns as strings (client.ts
// asks for `bigint: false`, which keeps them exact as text); li's bigints — seq, watermarks, pids, clock
// ticks — stay far below 2^53, so each row type's bigint columns become numbers here, once, before a row
// leaves the adapter. test/ledger/postgres/row-numbers.test.ts holds each list to the schema's bigint columns.

import type { ConsumerRow, LegRow, OwedDelivery, TransitionRow } from "../rows.ts";

/** The bigint columns of each table li reads whole rows of (schema.ts declares them with int64()). */
export const BIGINT_COLUMNS = {
  legs: ["pid", "pid_start_ticks", "command_pid", "command_start_ticks", "peak_rss_bytes"],
  status_transitions: ["seq"],
  consumers: ["watermark"],
  /** Read only as the seq the next transition gets (backend.ts insertTransition, through num()). */
  seq_high_water: ["seq"],
} as const;

/** A number from a bigint or numeric value (a COUNT, a MAX of a bigint column); null stays null. */
export function num(value: unknown): number | null {
  return value === null || value === undefined ? null : Number(value);
}

function withNumbers<T>(row: Record<string, unknown>, columns: readonly string[]): T {
  const out: Record<string, unknown> = { ...row };
  for (const column of columns) {
    const value = out[column];
    if (typeof value === "string" || typeof value === "bigint") out[column] = Number(value);
  }
  return out as T;
}

export const legRow = (row: Record<string, unknown>): LegRow => withNumbers<LegRow>(row, BIGINT_COLUMNS.legs);
export const transitionRow = (row: Record<string, unknown>): TransitionRow => withNumbers<TransitionRow>(row, BIGINT_COLUMNS.status_transitions);
export const consumerRow = (row: Record<string, unknown>): ConsumerRow => withNumbers<ConsumerRow>(row, BIGINT_COLUMNS.consumers);
/** An owed (handler, event) pair: `seq` is the event's. */
export const owedRow = (row: Record<string, unknown>): OwedDelivery => withNumbers<OwedDelivery>(row, BIGINT_COLUMNS.status_transitions);
