// Refreshes a running leg's heartbeat_at, so liveness on another host can be judged (SPEC §8.5, §12.1).

import type { Backend } from "../ledger/backend.ts";

export const HEARTBEAT_INTERVAL_MS = 15_000;

export interface HeartbeatOptions {
  intervalMs?: number;
  now: () => number;
}

/** Starts the heartbeat; returns a stop function. A failed beat is skipped, never fatal to the leg. */
export function startHeartbeat(backend: Backend, legId: string, options: HeartbeatOptions): () => void {
  const beat = () => {
    backend.transaction((tx) => tx.updateLeg(legId, { heartbeat_at: options.now() }, { onlyOpen: true })).catch(() => {});
  };
  const timer = setInterval(beat, options.intervalMs ?? HEARTBEAT_INTERVAL_MS);
  timer.unref?.();
  return () => clearInterval(timer);
}
