// Wakes a waiter within milliseconds of a commit to a SQLite ledger: a watch on the database's directory
// (the -wal file comes and goes, so the directory is what can be watched), filtered to the database file
// and its -wal. Create it before the first check of the state, so a commit between that check and the
// first wait is not missed.

import { basename, dirname } from "node:path";
import { watchFilesIn } from "../file-wake.ts";
import type { ChangeWake, WakeOptions } from "../wake.ts";

export function watchSqliteFile(dbPath: string, options: WakeOptions = {}): ChangeWake {
  return watchFilesIn(dirname(dbPath), [basename(dbPath), `${basename(dbPath)}-wal`], options);
}
