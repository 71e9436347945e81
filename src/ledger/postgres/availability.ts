// Since when a PostgreSQL ledger has been serving this process (SPEC §17 item 5): the later of the
// server's start (`pg_postmaster_start_time()`, a restart loses nobody's heartbeats but stops them) and
// the moment this process reached the ledger again after losing it (a partition, a black-holed
// connection). A watcher counts no heartbeat age from before it, so no leg is reaped for beats that
// could not be written.

import type { SQL } from "bun";
import { UsageError } from "../../util/errors.ts";

/** The server's start in Unix seconds, on its own clock (the ledger's). */
export const SERVER_START_SQL = "SELECT extract(epoch from pg_postmaster_start_time())::float8 AS started";

/**
 * Test setting: the server's start in Unix seconds, instead of asking it. The suite's throwaway cluster
 * started seconds ago, and tests backdate heartbeats by hours; a test of the real start unsets it.
 */
export const SERVER_START_ENV = "LI_TEST_PG_STARTED_AT";

/** The injected start (LI_TEST_PG_STARTED_AT), or null to ask the server. */
export function injectedServerStart(env: Record<string, string | undefined> = process.env): number | null {
  const value = env[SERVER_START_ENV];
  if (value === undefined || value.trim() === "") return null;
  const seconds = Number(value);
  if (!/^\s*\d+(\.\d+)?\s*$/.test(value) || !Number.isFinite(seconds)) throw new UsageError(`${SERVER_START_ENV}: expected Unix seconds, got '${value}'`);
  return seconds;
}

export async function serverStart(sql: SQL): Promise<number | null> {
  const [row] = await sql.unsafe(SERVER_START_SQL);
  return row?.started === null || row?.started === undefined ? null : Number(row.started);
}

/** Whether this process has lost the ledger, and when it last regained it (the ledger's clock). */
export class Reachability {
  private lost = false;
  private regained: number | null = null;
  /** Calls that failed as unreachable so far. */
  losses = 0;

  constructor(private readonly now: () => number) {}

  /** A call failed as unreachable. */
  lose(): void {
    this.lost = true;
    this.losses++;
  }

  /** A call succeeded: the first after a loss is the moment the ledger came back. */
  reach(): void {
    if (!this.lost) return;
    this.lost = false;
    this.regained = this.now();
  }

  /** The last regain, or null when this process never lost the ledger. */
  get regainedAt(): number | null {
    return this.regained;
  }
}

/** The later of the two moments; null when neither is known. */
export function laterOf(a: number | null, b: number | null): number | null {
  if (a === null) return b;
  return b === null ? a : Math.max(a, b);
}
