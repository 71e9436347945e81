// Pragmas and the embedded migrations, shared by the writer's open and the read-only open. No
// `node:*` imports here: the read-only commands load this module on their start-up path.

import type { Database } from "bun:sqlite";
import { LedgerUnavailableError } from "../../util/errors.ts";
import type { EmbeddedMigration } from "../embedded-migration.ts";
import { notALiLedger } from "./errors.ts";
import { SCHEMA_VERSION } from "./schema-version.gen.ts";

/** The embedded migrations' SQL (~13 KB of text), loaded only by an open that finds the ledger behind this li. */
function embeddedMigrations(): readonly EmbeddedMigration[] {
  const { MIGRATIONS } = require("./migrations.gen.ts") as typeof import("./migrations.gen.ts");
  if (MIGRATIONS.length !== SCHEMA_VERSION) throw new Error(`schema-version.gen.ts says ${SCHEMA_VERSION}, migrations.gen.ts has ${MIGRATIONS.length}: run bun scripts/embed-migrations.ts`);
  return MIGRATIONS;
}

const BUSY = /SQLITE_BUSY|database is locked/i;

export function isBusyError(error: unknown): boolean {
  return error instanceof Error && (BUSY.test(error.message) || BUSY.test(String((error as { code?: string }).code ?? "")));
}

/**
 * SQLite's busy timeout: how long a statement waits for another process's write lock before it fails
 * as "unreachable" (§17). 5 s; `LI_SQLITE_BUSY_TIMEOUT_MS` changes it (tests of a held lock, slow disks).
 */
export function defaultBusyTimeoutMs(): number {
  const given = Number(process.env.LI_SQLITE_BUSY_TIMEOUT_MS);
  return Number.isFinite(given) && given > 0 ? given : 5000;
}

/** Retries a statement that failed with SQLITE_BUSY after the busy timeout (SQLite's handler is not fair). */
export function withBusyRetry<T>(fn: () => T, attempts = 8): T {
  for (let i = 0; ; i++) {
    try {
      return fn();
    } catch (error) {
      if (!isBusyError(error) || i >= attempts - 1) throw error;
      Bun.sleepSync(5 + Math.random() * 20 * (i + 1));
    }
  }
}

/** Busy timeout first, then WAL only when not already WAL (it persists in the file). */
export function applyPragmas(db: Database, busyTimeoutMs: number): void {
  db.run(`PRAGMA busy_timeout = ${Math.floor(busyTimeoutMs)}`);
  const mode = db.query<{ journal_mode: string }, []>("PRAGMA journal_mode").get();
  if (mode?.journal_mode !== "wal") withBusyRetry(() => db.run("PRAGMA journal_mode = WAL"));
  db.run("PRAGMA synchronous = NORMAL");
  db.run("PRAGMA foreign_keys = ON");
}

function writtenByNewerLi(path: string, seen: number, known: number): LedgerUnavailableError {
  return new LedgerUnavailableError(path, `written by a newer li (schema ${seen}, this li knows ${known}); upgrade li`);
}

export function userVersion(db: Database): number {
  return db.query<{ user_version: number }, []>("PRAGMA user_version").get()?.user_version ?? 0;
}

/** The names of the file's tables (a cheap read of sqlite_master, which any statement parses anyway). */
export function tableNames(db: Database): string[] {
  return db.query<{ name: string }, []>("SELECT name FROM sqlite_master WHERE type = 'table'").all().map((r) => r.name);
}

/** Refuses someone else's SQLite file (exit 78) before li reads or writes a byte of it (§18). */
export function assertLiLedger(db: Database, path: string, version: number): void {
  const why = notALiLedger(tableNames(db), version);
  if (why !== null) throw new LedgerUnavailableError(path, why);
}

/**
 * Applies embedded migrations. `user_version` counts the applied ones, so an up-to-date ledger costs
 * one read; otherwise BEGIN IMMEDIATE, re-read, apply, commit — safe when many processes open a new file.
 * `checkedVersion`: the version the caller read and passed through `assertLiLedger` on this connection,
 * so neither is read twice.
 */
export function migrate(db: Database, path: string, checkedVersion?: number): void {
  const version = () => userVersion(db);
  const known = SCHEMA_VERSION;
  const seen = checkedVersion ?? version();
  if (seen > known) throw writtenByNewerLi(path, seen, known);
  if (checkedVersion === undefined) assertLiLedger(db, path, seen);
  if (seen === known) return;
  const MIGRATIONS = embeddedMigrations();
  const needsForeignKeysOff = MIGRATIONS.slice(seen).some((m) => m.statements.some((s) => /PRAGMA\s+foreign_keys\s*=\s*OFF/i.test(s)));
  // SQLite ignores PRAGMA foreign_keys inside a transaction: switch it outside, check before COMMIT.
  if (needsForeignKeysOff) db.run("PRAGMA foreign_keys = OFF");
  withBusyRetry(() => db.run("BEGIN IMMEDIATE"));
  try {
    const current = version();
    if (current > known) throw writtenByNewerLi(path, current, known);
    db.run("CREATE TABLE IF NOT EXISTS __li_migrations (name TEXT PRIMARY KEY, hash TEXT NOT NULL, applied_at REAL NOT NULL)");
    for (const migration of MIGRATIONS.slice(current)) {
      for (const statement of migration.statements) {
        if (/^PRAGMA\s+foreign_keys/i.test(statement)) continue;
        db.run(statement);
      }
      db.run("INSERT INTO __li_migrations (name, hash, applied_at) VALUES (?, ?, ?)", [migration.name, migration.hash, Date.now() / 1000]);
    }
    if (needsForeignKeysOff) {
      const problems = db.query("PRAGMA foreign_key_check").all();
      if (problems.length > 0) throw new Error(`migration broke ${problems.length} foreign key(s)`);
    }
    db.run(`PRAGMA user_version = ${known}`);
    db.run("COMMIT");
  } catch (error) {
    db.run("ROLLBACK");
    throw error;
  } finally {
    if (needsForeignKeysOff) db.run("PRAGMA foreign_keys = ON");
  }
}
