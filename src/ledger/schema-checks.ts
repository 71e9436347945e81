// The dialect-neutral part of the ledger's CHECK constraints: each vocabulary comes from the registry
// (src/lifecycle/) or the store that declares it, so the SQLite and PostgreSQL schemas enforce one list.

import { sql, type Column, type SQL } from "drizzle-orm";
import { POLICY_SPECS, type EntityKind } from "../lifecycle/policy.ts";
import { HANDLER_PREFIX, REGISTRATION_PREFIX } from "../lifecycle/consumer-prefixes.ts";

/** `column IN (…)` over a vocabulary declared in code, so the database enforces the same list. */
export function oneOf(column: Column, values: readonly string[]): SQL {
  return sql`${column} IN (${sql.raw(values.map((v) => `'${v}'`).join(", "))})`;
}

/** The status vocabulary of `kind`, from the registry. */
export function statusIn(kind: EntityKind, column: Column): SQL {
  return oneOf(column, POLICY_SPECS[kind].statuses);
}

/**
 * A live plain consumer (§9.6): not retired, and not a handler's or a leg registration's own consumer
 * (those carry a reserved prefix). The partial index `consumers_plain_live_idx` is declared with this
 * condition and the prune's owed query repeats it word for word, so that query reaches the few plain
 * consumers by index instead of reading every registration's consumer. `substr` rather than LIKE/GLOB:
 * case-sensitive and spelled the same in both dialects.
 */
export function plainLiveConsumer(name: string, retiredAt: string): string {
  return `${retiredAt} IS NULL AND substr(${name}, 1, ${REGISTRATION_PREFIX.length}) <> '${REGISTRATION_PREFIX}' AND substr(${name}, 1, ${HANDLER_PREFIX.length}) <> '${HANDLER_PREFIX}'`;
}
