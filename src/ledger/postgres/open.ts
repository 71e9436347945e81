// Opens a PostgreSQL ledger (SPEC §14): synchronously, as the SQLite ledger opens; the pool connects
// (and migrates, when the command may create the ledger) on the first operation (connection.ts).
// src/ledger/open.ts and open-reads.ts load this module only for a postgres:// location.

import { Ledger, type LedgerOptions } from "../ledger.ts";
import type { OpenedReads } from "../open-reads.ts";
import { PgBackend } from "./backend.ts";
import { PgConnection } from "./connection.ts";
import { resolvePgTarget } from "./options.ts";
import { injectedServerStart } from "./availability.ts";
import { PgReads } from "./reads.ts";
import { listenForChanges } from "./wake.ts";

export function openPgLedger(url: string, options: LedgerOptions & { create: boolean }): Ledger {
  const { create, ...ledgerOptions } = options;
  // The ledger's clock is the backend's (the server's), unless a test injected one.
  const serverStartedAt = injectedServerStart();
  const backend = new PgBackend(new PgConnection(resolvePgTarget(url), { create }), { ...(ledgerOptions.now ? { now: ledgerOptions.now } : {}), ...(serverStartedAt === null ? {} : { serverStartedAt }) });
  return new Ledger(backend, ledgerOptions);
}

/** The read path: a missing li schema is "nothing recorded yet" (exit 2) and is not created (§16). */
export function openPgReads(url: string): OpenedReads {
  const conn = new PgConnection(resolvePgTarget(url), { create: false, max: 2 });
  return {
    reads: new PgReads((fn) => conn.run(fn)),
    wake: async () => listenForChanges(conn.pool(), conn.schema),
    now: () => conn.clock.now(),
    // Connecting measures the server's clock (connection.ts); bounded and named as any read is.
    ready: () => conn.run(async () => {}),
    close: () => conn.close(),
  };
}
