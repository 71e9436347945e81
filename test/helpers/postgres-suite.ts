// Preloaded by bunfig.toml. With LI_TEST_BACKEND=postgres it starts the throwaway cluster
// (test/helpers/postgres.ts) before any test spawns li, creates the ONE shared test database every test
// home's schema lives in, publishes its URL in process.env for li processes and workers, prints the
// SQLite-only list. On both backends it closes after each test the ledger handles that test opened.

import { afterEach, beforeEach } from "bun:test";
import { onPostgres, SUITE_DB_URL_VARIABLE, sqliteOnlyReport } from "./backends.ts";
import { closeTestHandles, markTestStart } from "./test-handles.ts";

/** The database of the whole PostgreSQL half; each test home is a schema in it (backends.ts). */
const SUITE_DATABASE = "li_suite";

if (onPostgres) {
  const { asSuperuser, postgresBinDir, postgresCluster } = await import("./postgres.ts");
  if (!postgresBinDir()) {
    throw new Error(
      "LI_TEST_BACKEND=postgres: PostgreSQL is not installed (no initdb under /usr/lib/postgresql/*/bin, LI_TEST_PG_BIN or PATH); see README \"PostgreSQL tests\"",
    );
  }
  const cluster = postgresCluster();
  await asSuperuser((sql) => sql.unsafe(`CREATE DATABASE "${SUITE_DATABASE}"`));
  process.env[SUITE_DB_URL_VARIABLE] = cluster.url(SUITE_DATABASE);
  console.error(`\nLI_TEST_BACKEND=postgres: every ledger test runs on ${cluster.url(SUITE_DATABASE)}, one schema per test home.\n${sqliteOnlyReport()}\n`);
}

// On both backends (the PostgreSQL-specific suites run in the SQLite half too): every test cluster started
// seconds ago and tests backdate heartbeats by hours, so a watcher would count their ages from the
// server's start (§17 item 5). Tests of that rule unset it (test/ledger/postgres/availability.test.ts).
process.env.LI_TEST_PG_STARTED_AT ??= "0";

beforeEach(() => markTestStart());
afterEach(() => closeTestHandles());
