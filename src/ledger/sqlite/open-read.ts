// Opens an existing SQLite ledger for the read-only commands (`li wait`, `li show`, `li ls`) without
// loading `node:fs`: its first import costs ~1 ms of start-up in the compiled binary. It only reaches
// for node:fs to explain a file it could not open.

import { Database } from "bun:sqlite";
import { LedgerUnavailableError, UsageError } from "../../util/errors.ts";
import { applyPragmas, migrate } from "./migrate.ts";
import { MIGRATIONS } from "./migrations.gen.ts";

/** A missing file is "nothing recorded yet" (exit 2) and is never created (§16); anything else is exit 78. */
export function openSqliteForReads(path: string, busyTimeoutMs = 5000): Database {
  let db: Database;
  try {
    db = new Database(path, { readwrite: true, create: false, strict: true });
  } catch (error) {
    throw whyNotOpened(path, error);
  }
  try {
    db.run(`PRAGMA busy_timeout = ${Math.floor(busyTimeoutMs)}`);
    const version = db.query<{ user_version: number }, []>("PRAGMA user_version").get()?.user_version ?? 0;
    if (version !== MIGRATIONS.length) {
      // Older (or empty) file: bring it up to date as any writer would; newer: refused by migrate.
      applyPragmas(db, busyTimeoutMs);
      migrate(db, path);
    }
    return db;
  } catch (error) {
    db.close();
    if (error instanceof LedgerUnavailableError || error instanceof UsageError) throw error;
    throw new LedgerUnavailableError(path, (error as Error).message);
  }
}

function whyNotOpened(path: string, error: unknown): Error {
  const fs = require("node:fs") as typeof import("node:fs");
  if (!fs.existsSync(path)) return new UsageError(`nothing recorded yet: no ledger at ${path}`);
  if (fs.statSync(path).isDirectory()) return new LedgerUnavailableError(path, "is a directory, not a database file");
  return new LedgerUnavailableError(path, `cannot open: ${(error as Error).message}`);
}
