// Opens the ledger a location names, with the backend that location needs.

import type { Database } from "bun:sqlite";
import { statSync } from "node:fs";
import type { Paths } from "./location.ts";
import { Ledger, type LedgerOptions } from "./ledger.ts";
import type { Patience } from "./patience.ts";
import { SqliteBackend } from "./sqlite/backend.ts";
import { defaultBusyTimeoutMs } from "./sqlite/migrate.ts";
import { openSqlite } from "./sqlite/open.ts";

export interface OpenLedgerOptions extends LedgerOptions {
  /** false for read-only commands: a missing ledger is "nothing recorded yet" and is not created. */
  create: boolean;
  /**
   * PostgreSQL: the pool's connections, when not a command's (postgres/early.ts poolShape: 1, 2 for a
   * long-lived command). Ignored on SQLite.
   */
  connections?: number;
  /** PostgreSQL: how long a server that does not answer is waited for (patience.ts; default one attempt per call). */
  patience?: Patience;
}

/**
 * A SQLite ledger opened ahead of need (a warm supervisor, SPEC §19 dispatch, while it waits for its run):
 * the file's identity and the busy timeout it was opened with, so it is taken only for that same file.
 */
let ahead: { path: string; dev: number; ino: number; busyTimeoutMs: number; db: Database } | null = null;

/**
 * Opens the SQLite ledger at `paths` now, for the next openLedger of the same file to take: migrations'
 * check, pragmas and the first statements are paid while nothing waits. A ledger that does not exist yet, a
 * server's, or one that cannot be opened is left for that call to open (and to report). Safe to call once.
 */
export function openSqliteAhead(paths: Paths): void {
  if (paths.ledger.kind !== "sqlite" || ahead !== null) return;
  const path = paths.ledger.path;
  try {
    const before = statSync(path);
    const db = openSqlite(path, { create: false });
    // The statement cache and the schema are warm before the run's first read.
    db.query("SELECT count(*) FROM sqlite_schema").get();
    ahead = { path, dev: before.dev, ino: before.ino, busyTimeoutMs: defaultBusyTimeoutMs(), db };
  } catch {
    ahead = null;
  }
}

/** The ledger opened ahead, when it is `path`'s file still (not replaced meanwhile) and opened as now asked. */
function takeAhead(path: string): Database | null {
  const taken = ahead;
  ahead = null;
  if (taken === null) return null;
  try {
    const now = statSync(path);
    if (taken.path === path && now.dev === taken.dev && now.ino === taken.ino && taken.busyTimeoutMs === defaultBusyTimeoutMs()) return taken.db;
  } catch {
    // gone meanwhile: opened (and reported) the ordinary way
  }
  taken.db.close();
  return null;
}

export function openLedger(paths: Paths, options: OpenLedgerOptions): Ledger {
  if (paths.ledger.kind === "postgres") {
    // Loaded only for a postgres:// location (synchronously: the pool itself connects on first use).
    const { openPgLedger } = require("./postgres/open.ts") as typeof import("./postgres/open.ts");
    return openPgLedger(paths.ledger.url, { ...options, home: paths.home });
  }
  const { create, connections: _, patience: __, ...ledgerOptions } = options;
  const path = paths.ledger.path;
  const ownedDirs = path.startsWith(paths.home + "/") ? [paths.home] : [];
  const db = takeAhead(path) ?? openSqlite(path, { create, ownedDirs });
  return new Ledger(new SqliteBackend(db, path, ledgerOptions.now ? { now: ledgerOptions.now } : {}), ledgerOptions);
}
