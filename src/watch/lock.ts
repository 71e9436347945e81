// The watcher's single-instance lock per database per host: an exclusive lock held on a small side
// file for the watcher's whole life (the SQLite way of taking it is in src/ledger/sqlite/watch-lock.ts).
// The kernel drops it when the process dies, even by kill -9, so a crashed watcher leaves no stale lock.

import { holdExclusiveLock, LockHeldError } from "../ledger/sqlite/watch-lock.ts";

export interface WatchLock {
  readonly path: string;
  release(): void;
}

export class WatcherAlreadyRunningError extends Error {
  override readonly name = "WatcherAlreadyRunningError";
  constructor(readonly path: string) {
    super(`another li watch already runs for this ledger on this host (lock ${path})`);
  }
}

/** The lock file for a SQLite ledger at `dbPath`. */
export function lockPathFor(dbPath: string): string {
  return `${dbPath}.watch-lock`;
}

/** Takes the lock or throws WatcherAlreadyRunningError at once (no waiting). */
export function acquireWatchLock(path: string): WatchLock {
  try {
    return holdExclusiveLock(path);
  } catch (error) {
    if (error instanceof LockHeldError) throw new WatcherAlreadyRunningError(path);
    throw error;
  }
}
