// Spooling a leg's outcome (SPEC §17): loaded only when the ledger stayed unreachable past --ledger-retry.

import type { LegOutage, SpoolRequest } from "../legs/teardown/state.ts";
import { newEntryId, SPOOL_SCHEMA, SPOOL_VERSION, type SpoolEntry } from "./entry.ts";
import { spoolKey, withMac } from "./mac.ts";
import { fillReservation } from "./reserve.ts";
import { writeEntry } from "./store.ts";

/**
 * Writes one entry holding the leg's outcome (and its setup, when that never reached the ledger); returns
 * the file. With the leg's reservation (§20) the entry goes into the room taken at setup; an entry that
 * outgrows it gives the room back and is written as a new file.
 */
export function spoolFinal(outage: Pick<LegOutage, "spoolDir" | "hostId">, o: SpoolRequest): string {
  const entry: SpoolEntry = {
    schema: SPOOL_SCHEMA,
    version: SPOOL_VERSION,
    id: o.reservation?.id ?? newEntryId(o.now),
    spooled_at: o.now,
    host_id: outage.hostId,
    session_id: o.record.sessionId,
    leg_id: o.record.legId,
    ledger: o.ledger,
    setup: o.setup,
    final: o.record,
  };
  // Signed with this home's spool key, so replay can tell li's own entries from planted ones (§18).
  const key = spoolKey(outage.spoolDir, { create: true });
  if (!key.ok) throw new Error(`cannot sign the spool entry: ${key.problem}`);
  const text = `${withMac(key.key, JSON.stringify(entry))}\n`;
  if (!o.reservation) return writeEntry(outage.spoolDir, entry.id, text);
  try {
    return fillReservation(outage.spoolDir, o.reservation, text);
  } catch {
    o.reservation.release();
    return writeEntry(outage.spoolDir, entry.id, text);
  }
}
