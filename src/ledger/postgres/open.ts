// Opens a PostgreSQL ledger (SPEC §14): synchronously, as the SQLite ledger opens; the pool connects
// (and migrates, when the command may create the ledger) on the first operation (connection.ts).
// src/ledger/open.ts loads this module only for a postgres:// location (the read path: open-reads.ts).

import { Ledger, type LedgerOptions } from "../ledger.ts";
import type { Patience } from "../patience.ts";
import { PgBackend } from "./backend.ts";
import { PgConnection, slotPlace } from "./connection.ts";
import { adoptEarly, poolShape } from "./early.ts";
import { holdsLedgerLong } from "../slot-use.ts";
import { resolvePgTarget } from "./options.ts";
import { injectedServerStart } from "./availability.ts";

/** `home`: LI_HOME, where the host's connection slots are (§20, slots.ts); without it the pool takes none. */
export function openPgLedger(url: string, options: LedgerOptions & { create: boolean; connections?: number; patience?: Patience; home?: string }): Ledger {
  const { create, connections, patience, home, ...ledgerOptions } = options;
  // The ledger's clock is the backend's (the server's), unless a test injected one.
  const serverStartedAt = injectedServerStart();
  // A pool of another size than a command's is not the one the entry point started early.
  const handshake = connections === undefined ? adoptEarly(url, "writes") : undefined;
  const shape = connections === undefined ? poolShape("writes") : { ...poolShape("writes"), max: connections };
  const target = resolvePgTarget(url);
  const slots = slotPlace(target, home, holdsLedgerLong(), create);
  const backend = new PgBackend(new PgConnection(target, { create, shape, slots, ...(handshake ? { handshake } : {}), ...(patience ? { patience } : {}) }), { ...(ledgerOptions.now ? { now: ledgerOptions.now } : {}), ...(serverStartedAt === null ? {} : { serverStartedAt }) });
  return new Ledger(backend, ledgerOptions);
}
