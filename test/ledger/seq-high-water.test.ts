// The migration that adds the seq high water (rules/seq.ts) seeds it from the history as it stands, on
// both dialects: a ledger upgraded after a prune deleted its newest rows still never hands out a seq at
// or below the highest one it kept. (The behaviour itself, prune then a new event, is in
// test/sweeps/prune.test.ts on the suite's backend.) Both halves upgrade a ledger of their own, so
// neither reads the backend switch.

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

/** How many migrations come before the high water's: a ledger at that version predates it. */
function before(migrations: readonly EmbeddedMigration[]): number {
  const at = migrations.findIndex((m) => m.name.endsWith("_seq_high_water"));
  if (at < 1) throw new Error("no seq_high_water migration");
  return at;
}

/** What a pruned ledger's history looks like: seq 1..7 were handed out, 4..6 pruned. */
const KEPT_SEQS = [1, 2, 3, 7];
const HISTORY_ROW = "INSERT INTO status_transitions (id, seq, entity_type, entity_id, status, reason_code, source, created_at) VALUES ";

test("SQLite: upgrading a ledger seeds the high water from its MAX(seq); a fresh ledger starts at 0", () => {
  const db = new Database(":memory:");
  applyPragmas(db, 1000);
  const older = before(SQLITE_MIGRATIONS);
  // The ledger as an older li left it: its migrations applied and counted by user_version.
  db.run("CREATE TABLE __li_migrations (name TEXT PRIMARY KEY, hash TEXT NOT NULL, applied_at REAL NOT NULL)");
  for (const migration of SQLITE_MIGRATIONS.slice(0, older)) {
    for (const statement of migration.statements) if (!/^PRAGMA\s+foreign_keys/i.test(statement)) db.run(statement);
    db.run("INSERT INTO __li_migrations (name, hash, applied_at) VALUES (?, ?, 0)", [migration.name, migration.hash]);
  }
  db.run(`PRAGMA user_version = ${older}`);
  for (const seq of KEPT_SEQS) db.run(`${HISTORY_ROW}(?, ?, 'session', 's', 'running', 'run.started.ok', 'executor', 0)`, [`t${seq}`, seq]);
  migrateSqlite(db, ":memory:");
  expect(db.query("SELECT id, seq FROM seq_high_water").all()).toEqual([{ id: 1, seq: 7 }]);
  db.close();

  const fresh = new Database(":memory:");
  applyPragmas(fresh, 1000);
  migrateSqlite(fresh, ":memory:");
  expect(fresh.query("SELECT id, seq FROM seq_high_water").all()).toEqual([{ id: 1, seq: 0 }]);
  fresh.close();
});

describePostgres("the seq high water's PostgreSQL migration", () => {
  const db = usePostgresDatabase();

  test("upgrading a ledger seeds the high water from its MAX(seq); a fresh schema starts at 0", async () => {
    const upgraded = await connectPg(resolvePgTarget(`${db.url}&search_path=hw_upgraded`));
    const fresh = await connectPg(resolvePgTarget(`${db.url}&search_path=hw_fresh`));
    try {
      await migratePg(upgraded, PG_MIGRATIONS.slice(0, before(PG_MIGRATIONS)));
      for (const seq of KEPT_SEQS) await upgraded.sql.unsafe(`${HISTORY_ROW}($1, $2, 'session', 's', 'running', 'run.started.ok', 'executor', 0)`, [`t${seq}`, seq]);
      const result = await migratePg(upgraded);
      expect(result.applied).toContain(PG_MIGRATIONS[before(PG_MIGRATIONS)]!.name);
      expect(await upgraded.sql.unsafe("SELECT id, seq::int AS seq FROM seq_high_water")).toEqual([{ id: 1, seq: 7 }]);

      await migratePg(fresh);
      expect(await fresh.sql.unsafe("SELECT id, seq::int AS seq FROM seq_high_water")).toEqual([{ id: 1, seq: 0 }]);
    } finally {
      await Promise.all([upgraded.close(), fresh.close()]);
    }
  });
});
