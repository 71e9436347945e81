// The watcher's single-instance lock (one `li watch` per ledger per host, §12.6), as every backend hands
// it out through `Backend.lockWatcher` (SQLite: a kernel file lock beside the database; PostgreSQL: a
// session-level advisory lock on a reserved connection).

/** Another process holds the lock; `path` is how messages name it (never a password). */
export class LockHeldError extends Error {
  override readonly name = "LockHeldError";
  constructor(readonly path: string) {
    super(`lock ${path} is held by another process`);
  }
}

export interface WatcherLock {
  /** How messages name the lock. */
  readonly path: string;
  /**
   * Resolves while the lock is (still) held; throws when it was lost to another holder. A kernel file
   * lock cannot be lost while its process lives; a PostgreSQL session can drop and be taken over.
   */
  ensureHeld(): Promise<void>;
  /** Idempotent. */
  release(): Promise<void>;
}
