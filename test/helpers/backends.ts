// The suite's backend switch: LI_TEST_BACKEND=postgres runs every ledger test on PostgreSQL (SPEC §14),
// each test home its own schema in one shared test database; unset (or "sqlite") runs it on SQLite.
// Also the ONE list of tests that are SQLite-only by nature, each with its reason.

import { describe, test } from "bun:test";
import { resolve } from "node:path";
import { resolvePaths, type Paths } from "../../src/ledger/location.ts";

export type TestBackend = "sqlite" | "postgres";

function backendFromEnv(): TestBackend {
  const given = process.env.LI_TEST_BACKEND;
  if (given === undefined || given === "" || given === "sqlite") return "sqlite";
  if (given === "postgres") return "postgres";
  throw new Error(`LI_TEST_BACKEND: "${given}" is not a backend (sqlite or postgres)`);
}

export const TEST_BACKEND: TestBackend = backendFromEnv();
export const onPostgres = TEST_BACKEND === "postgres";

/**
 * The URL of the shared test database, set in process.env by the preload (postgres-suite.ts) so workers
 * spawned with `env: process.env` find it too. Only meaningful in postgres mode.
 */
export const SUITE_DB_URL_VARIABLE = "LI_TEST_PG_SUITE_URL";

function suiteUrl(): string {
  const url = process.env[SUITE_DB_URL_VARIABLE];
  if (!url) {
    throw new Error(
      `LI_TEST_BACKEND=postgres but ${SUITE_DB_URL_VARIABLE} is not set: the preload test/helpers/postgres-suite.ts sets it (a worker must be spawned with env: process.env)`,
    );
  }
  return url;
}

/** `t_` + 16 hex digits of a hash of the home's absolute path: one home, one schema, every time. */
export function schemaForHome(home: string): string {
  return `t_${Bun.hash(resolve(home)).toString(16).padStart(16, "0")}`;
}

/**
 * The environment a li process (or an in-process resolvePaths) needs, beside LI_HOME, to use `home`'s
 * ledger on the suite's backend: nothing on SQLite ($LI_HOME/state.db); on PostgreSQL the shared test
 * database with the home's own schema, which li's migrations create on its first write. The schema
 * rides in the URL (`search_path`) rather than LI_PG_SCHEMA: an in-process openLedger resolves the
 * target from the URL and process.env, not from the env a test hands resolvePaths.
 */
export function ledgerEnvFor(home: string): Record<string, string> {
  if (!onPostgres) return {};
  const url = new URL(suiteUrl());
  // A suite URL that already names a schema pins every home to it: a PostgreSQL-specific test pointing
  // the shared workers (test/helpers/workers/) at its own ledger (test/helpers/pg-ledger.ts).
  if (!url.searchParams.has("search_path")) url.searchParams.set("search_path", schemaForHome(home));
  return { LI_DB: url.toString() };
}

/** resolvePaths for a test home on the suite's backend (in-process tests and workers). */
export function pathsForHome(home: string, extra: Record<string, string> = {}): Paths {
  return resolvePaths({ env: { LI_HOME: home, ...ledgerEnvFor(home), ...extra } });
}

/**
 * Tests that are SQLite-only by nature, by name, with the reason. Declared once here; the files use
 * describeSqliteOnly/testSqliteOnly with the name, and the PostgreSQL half prints this list so nobody
 * thinks these ran there.
 */
export const SQLITE_ONLY = {
  "sqlite-errors": "maps bun:sqlite's error codes (SQLITE_FULL, SQLITE_READONLY, SQLITE_BUSY…) to li's errors",
  "query-plans": "reads SQLite's EXPLAIN QUERY PLAN for every listing query",
  "disk-full": "fills a small tmpfs under the SQLite file to provoke SQLITE_FULL",
  "ledger-file": "the ledger file itself: its mode, its directory, WAL, a corrupt or foreign file, --db PATH",
  "file-wake": "the file-watch wake-up (inotify on the SQLite file's directory)",
  "watch-file-lock": "the watcher's single-instance file lock under $LI_HOME",
  "remote-kill-refused":
    "on SQLite li kill cannot reach another host's supervisor and refuses (§12.2); on PostgreSQL it records the request and the leg stops itself (test/ledger/postgres/hosts.test.ts)",
  "same-connection-write":
    "a hook writes through SQLite's own connection inside li's transaction (between the guarded read and its UPDATE, or inside a prune batch); on PostgreSQL that row is locked (FOR UPDATE), and test/ledger/postgres races real connections instead",
  "prune-vs-reopen-sqlite":
    "the prune-versus-reopen interleavings through SQLite's write lock (BEGIN IMMEDIATE, total_changes(), a second bun:sqlite connection); PostgreSQL's, with a real second connection, are in test/ledger/postgres",
  "write-lock-held": "another connection holds SQLite's database-wide write lock (BEGIN IMMEDIATE) past the busy timeout; PostgreSQL has row locks and lock_timeout instead",
} as const satisfies Record<string, string>;

export type SqliteOnlyName = keyof typeof SQLITE_ONLY;

/** `describe` on SQLite; `describe.skip` on PostgreSQL (the reason is in SQLITE_ONLY and printed by the preload). */
export function describeSqliteOnly(name: SqliteOnlyName): typeof describe {
  void SQLITE_ONLY[name];
  return onPostgres ? describe.skip : describe;
}

/** `test` on SQLite; `test.skip` on PostgreSQL. */
export function testSqliteOnly(name: SqliteOnlyName): typeof test {
  void SQLITE_ONLY[name];
  return onPostgres ? test.skip : test;
}

/** The list as the PostgreSQL half prints it. */
export function sqliteOnlyReport(): string {
  const lines = Object.entries(SQLITE_ONLY).map(([name, why]) => `  - ${name}: ${why}`);
  return `SQLite-only tests, NOT RUN on PostgreSQL (test/helpers/backends.ts SQLITE_ONLY):\n${lines.join("\n")}`;
}
