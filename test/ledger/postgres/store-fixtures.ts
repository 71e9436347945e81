// One arrangement of rows, two ledgers: the same rows inserted into a migrated SQLite database and a
// migrated PostgreSQL schema, so a test can ask both adapters the same question and compare the answers.

import { Database } from "bun:sqlite";
import { connectPg, type PgClient } from "../../../src/ledger/postgres/client.ts";
import { migratePg } from "../../../src/ledger/postgres/migrate.ts";
import { resolvePgTarget } from "../../../src/ledger/postgres/options.ts";
import { applyPragmas, migrate as migrateSqlite } from "../../../src/ledger/sqlite/migrate.ts";
import type { PgDatabase } from "../../helpers/postgres.ts";

export type Rows = Record<string, Array<Record<string, string | number | null>>>;

let schemas = 0;

/** A fresh, migrated li schema in the test database, on its own pool. */
export async function pgLedgerClient(db: PgDatabase, max = 4): Promise<PgClient> {
  const schema = `s${process.pid}_${++schemas}`;
  const client = await connectPg(resolvePgTarget(`${db.url}&search_path=${schema}`, {}), { max });
  await migratePg(client);
  return client;
}

/** A fresh, migrated SQLite ledger in memory. */
export function sqliteLedgerDb(): Database {
  const db = new Database(":memory:");
  applyPragmas(db, 1000);
  migrateSqlite(db, ":memory:");
  return db;
}

/** Inserts `rows` (table → rows) into both ledgers, column by column as given. */
export async function arrange(sqlite: Database, pg: PgClient, rows: Rows): Promise<void> {
  for (const [table, list] of Object.entries(rows)) {
    for (const row of list) {
      const columns = Object.keys(row);
      const values = columns.map((c) => row[c] ?? null);
      sqlite.query(`INSERT INTO ${table} (${columns.join(", ")}) VALUES (${columns.map(() => "?").join(", ")})`).run(...(values as []));
      await pg.sql.unsafe(`INSERT INTO ${table} (${columns.join(", ")}) VALUES (${columns.map((_, i) => `$${i + 1}`).join(", ")})`, values);
    }
  }
}

/** A session row with the columns the sweeps and the prune read. */
export function session(id: string, status: string, updatedAt: number, extra: Record<string, string | number | null> = {}): Record<string, string | number | null> {
  return { id, status, created_at: updatedAt - 10, updated_at: updatedAt, started_at: updatedAt - 10, ...extra };
}

/** A leg row (bigint pids and ticks included, so the conversion is exercised). */
export function leg(id: string, sessionId: string, seq: number, extra: Record<string, string | number | null> = {}): Record<string, string | number | null> {
  return {
    id,
    session_id: sessionId,
    seq,
    run_id: `run-${id}`,
    state_root: `/runs/${id}`,
    artifact_root: `/runs/${id}/artifacts`,
    command: '["true"]',
    pid: 4_000_000 + seq,
    pid_start_ticks: 9_007_199_254_740 + seq,
    command_pid: 4_100_000 + seq,
    command_start_ticks: 123_456_789_012 + seq,
    host_id: "host-a",
    started_at: 1_800_000_000 + seq,
    heartbeat_at: 1_800_000_100.25 + seq,
    status: "running",
    ...extra,
  };
}

/** A history row; terminal by default. */
export function transition(id: string, seq: number, entityType: string, entityId: string, extra: Record<string, string | number | null> = {}): Record<string, string | number | null> {
  return {
    id,
    seq,
    entity_type: entityType,
    entity_id: entityId,
    status: "completed",
    reason_code: "session.completed.exit_zero",
    source: "agent",
    created_at: 1_800_000_000 + seq,
    terminal_event: 1,
    ...extra,
  };
}
