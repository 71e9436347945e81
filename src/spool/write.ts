// Spooling a leg's outcome (SPEC §17): loaded only when the ledger stayed unreachable past --ledger-retry.

import type { LegOutage, SpoolRequest } from "../legs/teardown/state.ts";
import { newEntryId, SPOOL_SCHEMA, SPOOL_VERSION } from "./entry.ts";
import { writeEntry } from "./store.ts";

/** Writes one entry holding the leg's outcome (and its setup, when that never reached the ledger); returns the file. */
export function spoolFinal(outage: Pick<LegOutage, "spoolDir" | "hostId">, o: SpoolRequest): string {
  return writeEntry(outage.spoolDir, {
    schema: SPOOL_SCHEMA,
    version: SPOOL_VERSION,
    id: newEntryId(o.now),
    spooled_at: o.now,
    host_id: outage.hostId,
    session_id: o.record.sessionId,
    leg_id: o.record.legId,
    ledger: o.ledger,
    setup: o.setup,
    final: o.record,
  });
}
