// The dialect-neutral part of the ledger's CHECK constraints: each vocabulary comes from the registry
// (src/lifecycle/) or the store that declares it, so the SQLite and PostgreSQL schemas enforce one list.

import { sql, type Column, type SQL } from "drizzle-orm";
import { POLICY_SPECS, type EntityKind } from "../lifecycle/policy.ts";

/** `column IN (…)` over a vocabulary declared in code, so the database enforces the same list. */
export function oneOf(column: Column, values: readonly string[]): SQL {
  return sql`${column} IN (${sql.raw(values.map((v) => `'${v}'`).join(", "))})`;
}

/** The status vocabulary of `kind`, from the registry. */
export function statusIn(kind: EntityKind, column: Column): SQL {
  return oneOf(column, POLICY_SPECS[kind].statuses);
}

export { plainLiveConsumer } from "../lifecycle/consumer-prefixes.ts";
