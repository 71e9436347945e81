// Opens the ledger a location names, with the backend that location needs.

import { sqlitePathOf, type Paths } from "./location.ts";
import { Ledger, type LedgerOptions } from "./ledger.ts";
import { SqliteBackend } from "./sqlite/backend.ts";
import { openSqlite } from "./sqlite/open.ts";

export interface OpenLedgerOptions extends LedgerOptions {
  /** false for read-only commands: a missing ledger is "nothing recorded yet" and is not created. */
  create: boolean;
}

export function openLedger(paths: Paths, options: OpenLedgerOptions): Ledger {
  const { create, ...ledgerOptions } = options;
  const path = sqlitePathOf(paths.ledger);
  const ownedDirs = path.startsWith(paths.home + "/") ? [paths.home] : [];
  const db = openSqlite(path, { create, ownedDirs });
  return new Ledger(new SqliteBackend(db, path, ledgerOptions.now ? { now: ledgerOptions.now } : {}), ledgerOptions);
}
