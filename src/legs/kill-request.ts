// A leg learns that someone asked it to stop through the ledger (li kill from another host, SPEC §12.2):
// on the backend's notice (LISTEN on PostgreSQL) and, as the fallback, after each heartbeat.

import type { Backend } from "../ledger/backend.ts";

export interface KillRequestWatch {
  /** Re-reads the leg's kill request; `onRequest` runs (once) when it is set. Never throws. */
  check(): Promise<void>;
  stop(): void;
}

/** Watches leg `legId` for a recorded kill request; `onRequest` is called at most once, `afterCheck` after every look. */
export function watchKillRequest(backend: Backend, legId: string, onRequest: () => void, afterCheck: () => void = () => {}): KillRequestWatch {
  let told = false;
  let stopped = false;
  const check = async (): Promise<void> => {
    if (told || stopped) return;
    try {
      const leg = await backend.getLeg(legId);
      if (leg?.kill_requested_at == null || told || stopped) return;
      told = true;
      onRequest();
    } catch {
      // The ledger is unreachable for now: the next notice or heartbeat looks again.
    } finally {
      if (!stopped) afterCheck();
    }
  };
  const unsubscribe = backend.onKillRequest?.(legId, () => void check()) ?? (() => {});
  return {
    check,
    stop() {
      stopped = true;
      unsubscribe();
    },
  };
}
