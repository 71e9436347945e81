// An exclusive lock held for a process's life on a small SQLite side file: BEGIN EXCLUSIVE in rollback
// journal mode holds a kernel file lock that other processes see at once and that the kernel releases
// when the holder dies. Used for the watcher's single-instance lock.

import { Database } from "bun:sqlite";
import { closeSync, openSync } from "node:fs";
import { LockHeldError } from "../watcher-lock.ts";

/** Takes an exclusive lock on `path` for as long as the returned handle lives, or throws LockHeldError at once. */
export function holdExclusiveLock(path: string): { readonly path: string; release(): void } {
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
    if (/SQLITE_BUSY|locked/i.test(String((error as Error).message))) throw new LockHeldError(path);
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
