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

/**
 * The lock was lost and another holder has it now (a PostgreSQL session dropped and another watcher of
 * this host took the lock meanwhile): this watcher must stop, so that one host never runs two.
 */
export class WatcherLockLostError extends Error {
  override readonly name = "WatcherLockLostError";
  constructor(readonly path: string) {
    // The other holder may also be this watcher's own old session, dropped on our side but not yet ended by the server.
    super(`lost ${path}: the connection holding it dropped and another session (another li watch on this host) holds it now`);
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
  /**
   * The fleet's election (SPEC §14 "Many hosts"): true while this watcher is the one that runs the sweeps
   * one runner does for the whole fleet. Absent where one watcher is the whole fleet (SQLite: one host).
   * Called after `ensureHeld`; a watcher that already leads knows it without asking the server.
   */
  lead?(): Promise<boolean>;
  /** Idempotent. */
  release(): Promise<void>;
}
