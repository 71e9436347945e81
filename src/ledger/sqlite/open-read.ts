// Opens an existing SQLite ledger for the read-only commands (`li wait`, `li show`, `li ls`) without
// loading `node:fs`: its first import costs ~1 ms of start-up in the compiled binary. It only reaches
// for node:fs to explain a file it could not open.

import { Database } from "bun:sqlite";
import { LedgerUnavailableError, UsageError } from "../../util/errors.ts";
import { explained } from "./cantopen.ts";
import { EMPTY_FILE } from "./errors.ts";
import { applyPragmas, assertLiLedger, defaultBusyTimeoutMs, migrate, tableNames } from "./migrate.ts";
import { SCHEMA_VERSION } from "./schema-version.gen.ts";

/** A missing file is "nothing recorded yet" (exit 2) and is never created (§16); anything else is exit 78. */
export function openSqliteForReads(path: string, busyTimeoutMs = defaultBusyTimeoutMs()): Database {
  let db: Database;
  try {
    db = new Database(path, { readwrite: true, create: false, strict: true });
  } catch (error) {
    throw whyNotOpened(path, error);
  }
  try {
    db.run(`PRAGMA busy_timeout = ${Math.floor(busyTimeoutMs)}`);
    const version = db.query<{ user_version: number }, []>("PRAGMA user_version").get()?.user_version ?? 0;
    // Before anything that could write (WAL mode changes the header): someone else's file stays as it was.
    if (version <= SCHEMA_VERSION) assertLiLedger(db, path, version);
    if (version === 0 && tableNames(db).length === 0) {
      // A zero-length (or empty) file: there is nothing to read, and a reader never writes li's schema into it.
      throw new LedgerUnavailableError(path, EMPTY_FILE);
    } else if (version !== SCHEMA_VERSION) {
      // An older ledger: brought up to date as any writer would; a newer one is refused by migrate.
      applyPragmas(db, busyTimeoutMs);
      migrate(db, path, version);
    }
    return db;
  } catch (error) {
    db.close();
    if (error instanceof UsageError) throw error;
    throw explained(error, path) ?? new LedgerUnavailableError(path, (error as Error).message);
  }
}

function whyNotOpened(path: string, error: unknown): Error {
  const fs = require("node:fs") as typeof import("node:fs");
  if (!fs.existsSync(path)) return new UsageError(`nothing recorded yet: no ledger at ${path}`);
  if (fs.statSync(path).isDirectory()) return new LedgerUnavailableError(path, "is a directory, not a database file");
  return explained(error, path) ?? new LedgerUnavailableError(path, `cannot open: ${(error as Error).message}`);
}
