// Refreshes a running leg's heartbeat_at, so liveness on another host can be judged (SPEC §8.5, §12.1).

import type { Backend } from "../ledger/backend.ts";

export const HEARTBEAT_INTERVAL_MS = 15_000;

export interface HeartbeatOptions {
  intervalMs?: number;
  now: () => number;
  /** Where the one warning goes when beats start failing (§17: not one line per beat). */
  log?: (line: string) => void;
}

/**
 * Starts the heartbeat; returns a stop function. A failed beat is retried at the next interval, never
 * fatal to the leg: the command runs on whatever the ledger does (§17). The first failure warns once;
 * a beat that lands again after failures says so once too, so the log shows the outage's extent.
 */
export function startHeartbeat(backend: Backend, legId: string, options: HeartbeatOptions): () => void {
  let failing = false;
  let warned = false;
  const beat = () => {
    backend.transaction((tx) => tx.updateLeg(legId, { heartbeat_at: options.now() }, { onlyOpen: true })).then(
      () => {
        if (failing && warned) options.log?.("heartbeat: the ledger takes heartbeats again");
        failing = false;
      },
      (error: unknown) => {
        failing = true;
        if (warned) return;
        warned = true;
        options.log?.(`warning: heartbeat failed (${error instanceof Error ? error.message : String(error)}); retrying every beat, the command runs on`);
      },
    );
  };
  const timer = setInterval(beat, options.intervalMs ?? HEARTBEAT_INTERVAL_MS);
  timer.unref?.();
  return () => clearInterval(timer);
}
