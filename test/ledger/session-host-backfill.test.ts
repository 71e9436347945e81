// The migration that puts the current leg's host on the session row (li ls / li ui's host filter seeks it
// by index) backfills every existing session from its current leg, on both dialects: the name, and the
// machine part of the host id (MACHINE:BOOT; a host id without a boot is its own machine); a session with
// no current leg keeps none, and a session's older legs on other hosts do not count.

import { expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { connectPg } from "../../src/ledger/postgres/client.ts";
import { migratePg } from "../../src/ledger/postgres/migrate.ts";
import { MIGRATIONS as PG_MIGRATIONS } from "../../src/ledger/postgres/migrations.gen.ts";
import { resolvePgTarget } from "../../src/ledger/postgres/options.ts";
import { applyPragmas, migrate as migrateSqlite } from "../../src/ledger/sqlite/migrate.ts";
import { MIGRATIONS as SQLITE_MIGRATIONS } from "../../src/ledger/sqlite/migrations.gen.ts";
import type { EmbeddedMigration } from "../../src/ledger/embedded-migration.ts";
import { describePostgres, usePostgresDatabase } from "../helpers/postgres.ts";

/** How many migrations come before the session host's: a ledger at that version predates it. */
function before(migrations: readonly EmbeddedMigration[]): number {
  const at = migrations.findIndex((m) => m.name.endsWith("_session_host"));
  if (at < 1) throw new Error("no session_host migration");
  return at;
}

/** Four sessions as an older li left them: one leg; two legs (the current on another host); a host id without a boot and no name; no current leg. */
const ROWS = [
  "INSERT INTO sessions (id, status, created_at, updated_at, current_leg_id) VALUES ('s1', 'completed', 1, 1, 'l1'), ('s2', 'running', 2, 2, 'l2b'), ('s3', 'completed', 3, 3, 'l3'), ('s4', 'completed', 4, 4, NULL)",
  `INSERT INTO legs (id, session_id, seq, run_id, state_root, artifact_root, command, host_id, host_name, started_at, status) VALUES
     ('l1', 's1', 1, 'r1', '/r1', '', '[]', 'mach-1:boot-a', 'alpha', 1, 'completed'),
     ('l2a', 's2', 1, 'r2a', '/r2a', '', '[]', 'mach-1:boot-a', 'alpha', 2, 'completed'),
     ('l2b', 's2', 2, 'r2b', '/r2b', '', '[]', 'mach-2:boot-b', 'beta', 2, 'running'),
     ('l3', 's3', 1, 'r3', '/r3', '', '[]', 'plain', NULL, 3, 'completed')`,
];
const EXPECTED = [
  { id: "s1", host_name: "alpha", host_machine: "mach-1" },
  { id: "s2", host_name: "beta", host_machine: "mach-2" },
  { id: "s3", host_name: null, host_machine: "plain" },
  { id: "s4", host_name: null, host_machine: null },
];
const READ = "SELECT id, host_name, host_machine FROM sessions ORDER BY id";

test("SQLite: upgrading a ledger copies each session's current leg's host name and machine onto its row", () => {
  const db = new Database(":memory:");
  applyPragmas(db, 1000);
  const older = before(SQLITE_MIGRATIONS);
  db.run("CREATE TABLE __li_migrations (name TEXT PRIMARY KEY, hash TEXT NOT NULL, applied_at REAL NOT NULL)");
  for (const migration of SQLITE_MIGRATIONS.slice(0, older)) {
    for (const statement of migration.statements) if (!/^PRAGMA\s+foreign_keys/i.test(statement)) db.run(statement);
    db.run("INSERT INTO __li_migrations (name, hash, applied_at) VALUES (?, ?, 0)", [migration.name, migration.hash]);
  }
  db.run(`PRAGMA user_version = ${older}`);
  for (const statement of ROWS) db.run(statement);
  migrateSqlite(db, ":memory:");
  expect(db.query(READ).all()).toEqual(EXPECTED);
  db.close();
});

describePostgres("the session host's PostgreSQL migration", () => {
  const db = usePostgresDatabase();

  test("upgrading a ledger copies each session's current leg's host name and machine onto its row", async () => {
    const upgraded = await connectPg(resolvePgTarget(`${db.url}&search_path=sh_upgraded`));
    try {
      await migratePg(upgraded, PG_MIGRATIONS.slice(0, before(PG_MIGRATIONS)));
      for (const statement of ROWS) await upgraded.sql.unsafe(statement);
      const result = await migratePg(upgraded);
      expect(result.applied).toContain(PG_MIGRATIONS[before(PG_MIGRATIONS)]!.name);
      expect(await upgraded.sql.unsafe(READ)).toEqual(EXPECTED);
    } finally {
      await upgraded.close();
    }
  });
});
