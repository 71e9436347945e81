// One spool entry (SPEC §17): a leg's complete outcome that the ledger could not take, as plain JSON.
// Types and ids only: the leg that writes an entry loads no validator (replay validates, validate.ts).

import type { FinalRecord } from "../legs/teardown/record.ts";
import type { SpooledSetup } from "../legs/setup.ts";

export const SPOOL_SCHEMA = "li.spool";
export const SPOOL_VERSION = 1;

export interface SpoolEntry {
  schema: typeof SPOOL_SCHEMA;
  version: typeof SPOOL_VERSION;
  /** Recorded in the ledger in the replay's transaction: an entry applies once. */
  id: string;
  /** Unix seconds. */
  spooled_at: number;
  /** The host that spooled it (machine id + boot id). */
  host_id: string;
  session_id: string;
  leg_id: string;
  /** The ledger the leg could not reach, printable (no password). */
  ledger: string;
  /** null: setup was recorded; only the final write is owed. */
  setup: SpooledSetup | null;
  final: FinalRecord;
}

/** `$LI_HOME/spool`: this host's spool (LI_HOME is absolute, resolved by location.ts). */
export function spoolDirOf(liHome: string): string {
  return `${liHome}/spool`;
}

/** `20261201T121314.567Z-1a2b3c4d`: sorts by time, so the file names list oldest first. */
export function newEntryId(nowSeconds: number): string {
  const stamp = new Date(Math.round(nowSeconds * 1000)).toISOString().replace(/[-:]/g, "");
  return `${stamp}-${crypto.randomUUID().slice(0, 8)}`;
}

/** An entry id is a file name li made: `<stamp>-<8 hex>`, nothing else (a hostile name is never opened). */
export const ENTRY_ID = /^\d{8}T\d{6}\.\d{3}Z-[0-9a-f]{8}$/;
