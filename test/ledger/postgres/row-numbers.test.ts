// Bun hands PostgreSQL bigints back as strings: the adapter's converters turn exactly the schema's
// bigint columns into numbers, and a bigint column added to the schema without a converter fails here.

import { expect, test } from "bun:test";
import { getTableConfig, type PgTable } from "drizzle-orm/pg-core";
import * as schema from "../../../src/ledger/postgres/schema.ts";
import { BIGINT_COLUMNS, legRow } from "../../../src/ledger/postgres/row-numbers.ts";

function bigintColumnsByTable(): Record<string, string[]> {
  const found: Record<string, string[]> = {};
  for (const value of Object.values(schema)) {
    if (typeof value !== "object" || value === null || !("getSQL" in value)) continue;
    let config;
    try {
      config = getTableConfig(value as PgTable);
    } catch {
      continue; // not a table (ENTITY_TABLES)
    }
    const columns = config.columns.filter((c) => c.getSQLType() === "bigint").map((c) => c.name);
    if (columns.length > 0) found[config.name] = columns.sort();
  }
  return found;
}

test("each converter names exactly the bigint columns of its table in the schema", () => {
  const lists: Record<string, string[]> = Object.fromEntries(Object.entries(BIGINT_COLUMNS).map(([table, columns]) => [table, [...columns].sort()]));
  expect(lists).toEqual(bigintColumnsByTable());
});

test("a converted row has numbers where Bun gave strings, and keeps nulls and every other column", () => {
  const row = legRow({ id: "l", pid: "4194304", pid_start_ticks: "9007199254740", command_pid: null, command_start_ticks: "12", seq: 2, state_root: "/r" });
  expect(row).toMatchObject({ id: "l", pid: 4_194_304, pid_start_ticks: 9_007_199_254_740, command_pid: null, command_start_ticks: 12, seq: 2, state_root: "/r" });
});
