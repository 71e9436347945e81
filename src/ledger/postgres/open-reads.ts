// Opens a PostgreSQL ledger for reading only (`li wait`, `li show`, `li ls`): the connection and the read
// queries, never the write path (backend.ts and what it loads). src/ledger/open-reads.ts loads this
// module only for a postgres:// location.

import type { OpenedReads } from "../reads.ts";
import type { Patience } from "../patience.ts";
import { PgConnection, slotPlace } from "./connection.ts";
import { adoptEarly, poolShape } from "./early.ts";
import { holdsLedgerLong } from "../slot-use.ts";
import { resolvePgTarget } from "./options.ts";
import { PgReads } from "./reads.ts";
import { listenForChanges } from "./wake.ts";

/** A missing li schema is "nothing recorded yet" (exit 2) and is not created (§16). The pool: early.ts poolShape; a slot of the host's under `home` (§20). */
export function openPgReads(url: string, patience?: Patience, home?: string): OpenedReads {
  const handshake = adoptEarly(url, "reads");
  const target = resolvePgTarget(url);
  const slots = slotPlace(target, home, holdsLedgerLong(), false);
  const conn = new PgConnection(target, { create: false, shape: poolShape("reads"), slots, ...(handshake ? { handshake } : {}), ...(patience ? { patience } : {}) });
  return {
    reads: new PgReads((fn) => conn.run(fn)),
    wake: async () => listenForChanges(conn.pool(), conn.schema),
    now: () => conn.clock.now(),
    // Connecting measures the server's clock (connection.ts); bounded and named as any read is.
    ready: () => conn.run(async () => {}),
    // Nothing a read command sent matters once it ended (li wait at its --timeout, §17): no grace for it.
    close: () => conn.close({ abandon: true }),
  };
}
