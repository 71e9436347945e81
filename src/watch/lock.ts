// The watcher's single-instance lock, one per ledger per host (§12.6), taken from the ledger's backend
// (src/ledger/watcher-lock.ts): a holder that dies, even by kill -9, leaves no stale lock.

import type { Backend } from "../ledger/backend.ts";
import { LockHeldError, type WatcherLock } from "../ledger/watcher-lock.ts";

export type { WatcherLock };

export class WatcherAlreadyRunningError extends Error {
  override readonly name = "WatcherAlreadyRunningError";
  constructor(readonly path: string) {
    super(`another li watch already runs for this ledger on this host (lock ${path})`);
  }
}

/** Takes this host's watcher lock on the ledger or throws WatcherAlreadyRunningError at once (no waiting). */
export async function acquireWatchLock(backend: Backend, hostId: string): Promise<WatcherLock> {
  try {
    return await backend.lockWatcher(hostId);
  } catch (error) {
    if (error instanceof LockHeldError) throw new WatcherAlreadyRunningError(error.path);
    throw error;
  }
}
