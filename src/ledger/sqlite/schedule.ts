// §19's statements (src/ledger/rules/schedule.ts) on one SQLite connection: no row locks here, since
// BEGIN IMMEDIATE already serializes every writer of the database.

import type { Database } from "bun:sqlite";
import type { ScheduleRunner } from "../rules/schedule.ts";

export function scheduleRunner(db: Database): ScheduleRunner {
  return {
    all: async <T>(text: string, params: readonly unknown[]) => db.query(text).all(...(params as [])) as T[],
    run: async (text: string, params: readonly unknown[]) => db.query(text).run(...(params as [])).changes,
    forUpdate: "",
    skipLocked: "",
  };
}
