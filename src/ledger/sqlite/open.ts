// Opens a SQLite ledger: owner-only files, pragmas in the safe order, embedded migrations (STACK.md).

import { Database } from "bun:sqlite";
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, statSync } from "node:fs";
import { dirname } from "node:path";
import { LedgerUnavailableError, UsageError } from "../../util/errors.ts";
import { explained } from "./cantopen.ts";
import { EMPTY_FILE } from "./errors.ts";
import { applyPragmas, assertLiLedger, defaultBusyTimeoutMs, migrate, tableNames, userVersion } from "./migrate.ts";

export interface OpenSqliteOptions {
  /** Read-only commands must not create a ledger (§16): a missing file is "nothing recorded yet". */
  create: boolean;
  /** Directories li itself owns (LI_HOME) are created 0700. */
  ownedDirs?: readonly string[];
  busyTimeoutMs?: number;
}

function ensureOwnerOnlyFile(path: string): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  if (!existsSync(path)) {
    // Create it ourselves so the mode is 0600 from the first byte; SQLite gives -wal/-shm the same mode.
    closeSync(openSync(path, "a", 0o600));
  }
}

export function openSqlite(path: string, opts: OpenSqliteOptions): Database {
  for (const dir of opts.ownedDirs ?? []) {
    if (!existsSync(dir)) {
      try {
        mkdirSync(dir, { recursive: true, mode: 0o700 });
        chmodSync(dir, 0o700);
      } catch (error) {
        throw new LedgerUnavailableError(path, `cannot create ${dir}: ${(error as Error).message}`);
      }
    }
  }
  if (!existsSync(path)) {
    if (!opts.create) throw new UsageError(`nothing recorded yet: no ledger at ${path}`);
    try {
      ensureOwnerOnlyFile(path);
    } catch (error) {
      throw new LedgerUnavailableError(path, `cannot create: ${(error as Error).message}`);
    }
  } else if (statSync(path).isDirectory()) {
    throw new LedgerUnavailableError(path, "is a directory, not a database file");
  }
  let db: Database;
  try {
    db = new Database(path, { create: opts.create, strict: true });
  } catch (error) {
    throw explained(error, path) ?? new LedgerUnavailableError(path, `cannot open: ${(error as Error).message}`);
  }
  try {
    const busyTimeoutMs = opts.busyTimeoutMs ?? defaultBusyTimeoutMs();
    db.run(`PRAGMA busy_timeout = ${Math.floor(busyTimeoutMs)}`);
    // Before the pragmas: switching to WAL rewrites the header of someone else's file.
    const version = userVersion(db);
    assertLiLedger(db, path, version);
    // Only a command that creates ledgers may turn an empty file into one (§16: the others never create it).
    if (!opts.create && version === 0 && tableNames(db).length === 0) throw new LedgerUnavailableError(path, EMPTY_FILE);
    applyPragmas(db, busyTimeoutMs);
    migrate(db, path, version);
  } catch (error) {
    db.close();
    throw explained(error, path) ?? new LedgerUnavailableError(path, (error as Error).message);
  }
  return db;
}
