// §19's statements (src/ledger/rules/schedule.ts) over the pool or one transaction's handle: `?` numbered
// as `$n`, and the row locks (FOR UPDATE, SKIP LOCKED) only inside a transaction.

import type { SQL } from "bun";
import { numberedPlaceholders, type ScheduleRunner } from "../rules/schedule.ts";

export function scheduleRunner(run: <T>(fn: (sql: SQL) => Promise<T>) => Promise<T>, inTransaction: boolean): ScheduleRunner {
  return {
    all: <T>(text: string, params: readonly unknown[]) => run(async (sql) => (await sql.unsafe(numberedPlaceholders(text), [...params])) as T[]),
    run: (text: string, params: readonly unknown[]) => run(async (sql) => (await sql.unsafe(numberedPlaceholders(text), [...params])).count),
    forUpdate: inTransaction ? " FOR UPDATE" : "",
    skipLocked: inTransaction ? " FOR UPDATE SKIP LOCKED" : "",
  };
}
