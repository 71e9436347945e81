// Opens the ledger a location names, with the backend that location needs.

import type { Paths } from "./location.ts";
import { Ledger, type LedgerOptions } from "./ledger.ts";
import type { Patience } from "./patience.ts";
import { SqliteBackend } from "./sqlite/backend.ts";
import { openSqlite } from "./sqlite/open.ts";

export interface OpenLedgerOptions extends LedgerOptions {
  /** false for read-only commands: a missing ledger is "nothing recorded yet" and is not created. */
  create: boolean;
  /**
   * PostgreSQL: the pool's connections, when not a command's (postgres/early.ts poolShape: 1, 2 for a
   * long-lived command). Ignored on SQLite.
   */
  connections?: number;
  /** PostgreSQL: how long a server that does not answer is waited for (patience.ts; default one attempt per call). */
  patience?: Patience;
}

export function openLedger(paths: Paths, options: OpenLedgerOptions): Ledger {
  if (paths.ledger.kind === "postgres") {
    // Loaded only for a postgres:// location (synchronously: the pool itself connects on first use).
    const { openPgLedger } = require("./postgres/open.ts") as typeof import("./postgres/open.ts");
    return openPgLedger(paths.ledger.url, { ...options, home: paths.home });
  }
  const { create, connections: _, patience: __, ...ledgerOptions } = options;
  const path = paths.ledger.path;
  const ownedDirs = path.startsWith(paths.home + "/") ? [paths.home] : [];
  const db = openSqlite(path, { create, ownedDirs });
  return new Ledger(new SqliteBackend(db, path, ledgerOptions.now ? { now: ledgerOptions.now } : {}), ledgerOptions);
}
