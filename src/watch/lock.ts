// The watcher's single-instance lock per database per host: an exclusive SQLite lock held on a small
// side file for the watcher's whole life. The kernel drops it when the process dies, even by kill -9,
// so a crashed watcher never leaves a stale lock behind.

import { Database } from "bun:sqlite";
import { closeSync, openSync } from "node:fs";

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
  closeSync(openSync(path, "a", 0o600));
  const db = new Database(path);
  db.run("PRAGMA busy_timeout = 0");
  try {
    // Rollback journal mode: an EXCLUSIVE transaction then holds a kernel lock other processes see.
    db.run("PRAGMA journal_mode = DELETE");
    db.run("BEGIN EXCLUSIVE");
    // A write makes the exclusive lock real on every SQLite version.
    db.run("CREATE TABLE IF NOT EXISTS holder (pid INTEGER, since REAL)");
    db.run("DELETE FROM holder");
    db.run("INSERT INTO holder (pid, since) VALUES (?, ?)", [process.pid, Date.now() / 1000]);
  } catch (error) {
    db.close();
    if (/SQLITE_BUSY|locked/i.test(String((error as Error).message))) throw new WatcherAlreadyRunningError(path);
    throw error;
  }
  let released = false;
  return {
    path,
    release() {
      if (released) return;
      released = true;
      try {
        db.run("ROLLBACK");
      } finally {
        db.close();
      }
    },
  };
}
