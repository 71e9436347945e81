// Opens a PostgreSQL ledger (SPEC §14): synchronously, as the SQLite ledger opens; the pool connects
// (and migrates, when the command may create the ledger) on the first operation (connection.ts).
// src/ledger/open.ts loads this module only for a postgres:// location (the read path: open-reads.ts).

import { Ledger, type LedgerOptions } from "../ledger.ts";
import type { Patience } from "../patience.ts";
import { PgBackend } from "./backend.ts";
import { PgConnection } from "./connection.ts";
import { adoptEarly, POOL_SHAPES } from "./early.ts";
import { resolvePgTarget } from "./options.ts";
import { injectedServerStart } from "./availability.ts";

export function openPgLedger(url: string, options: LedgerOptions & { create: boolean; connections?: number; patience?: Patience }): Ledger {
  const { create, connections, patience, ...ledgerOptions } = options;
  // The ledger's clock is the backend's (the server's), unless a test injected one.
  const serverStartedAt = injectedServerStart();
  // A pool of another size than a command's is not the one the entry point started early.
  const handshake = connections === undefined ? adoptEarly(url, "writes") : undefined;
  const shape = connections === undefined ? POOL_SHAPES.writes : { ...POOL_SHAPES.writes, max: connections };
  const backend = new PgBackend(new PgConnection(resolvePgTarget(url), { create, shape, ...(handshake ? { handshake } : {}), ...(patience ? { patience } : {}) }), { ...(ledgerOptions.now ? { now: ledgerOptions.now } : {}), ...(serverStartedAt === null ? {} : { serverStartedAt }) });
  return new Ledger(backend, ledgerOptions);
}
