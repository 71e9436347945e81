// Opens a PostgreSQL ledger (SPEC §14): synchronously, as the SQLite ledger opens; the pool connects
// (and migrates, when the command may create the ledger) on the first operation (connection.ts).
// src/ledger/open.ts loads this module only for a postgres:// location (the read path: open-reads.ts).

import { Ledger, type LedgerOptions } from "../ledger.ts";
import { PgBackend } from "./backend.ts";
import { PgConnection } from "./connection.ts";
import { resolvePgTarget } from "./options.ts";
import { injectedServerStart } from "./availability.ts";

export function openPgLedger(url: string, options: LedgerOptions & { create: boolean; connections?: number }): Ledger {
  const { create, connections = 2, ...ledgerOptions } = options;
  // The ledger's clock is the backend's (the server's), unless a test injected one.
  const serverStartedAt = injectedServerStart();
  const backend = new PgBackend(new PgConnection(resolvePgTarget(url), { create, shape: { max: connections } }), { ...(ledgerOptions.now ? { now: ledgerOptions.now } : {}), ...(serverStartedAt === null ? {} : { serverStartedAt }) });
  return new Ledger(backend, ledgerOptions);
}
