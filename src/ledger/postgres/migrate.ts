// The migration runner of a PostgreSQL ledger (SPEC §3, §14). An up-to-date ledger costs one read of
// the version row; otherwise one transaction takes a transaction-scoped advisory lock (so processes
// opening a fresh database together queue instead of racing), re-reads the applied set, applies the
// embedded migrations li's schema lacks, records each, and sets the version row — SQLite's
// `user_version` — to the number li knows. A version above that is a ledger written by a newer li: 78.

import type { SQL } from "bun";
import { LedgerUnavailableError } from "../../util/errors.ts";
import { quoteIdent, type PgClient } from "./client.ts";
import { asPgLedgerError } from "./errors.ts";
import type { EmbeddedMigration } from "../embedded-migration.ts";
import { MIGRATIONS } from "./migrations.gen.ts";

/** The advisory lock's first key: "li" in ASCII; the second is the schema's hash, so schemas do not queue on each other. */
export const LOCK_NAMESPACE = 0x6c69;
/** Migrations may rewrite big tables; waiting for the lock behind another migrator is expected. */
const MIGRATION_LOCK_TIMEOUT = "5min";
const MIGRATION_STATEMENT_TIMEOUT = "30min";

export const VERSION_TABLE = "__li_version";
/** SQLSTATE of "relation does not exist" (also when its schema does not). */
export const UNDEFINED_TABLE = "42P01";
export const MIGRATIONS_TABLE = "__li_migrations";

export interface MigrateResult {
  /** The version row before this call (0 for a fresh schema). */
  from: number;
  to: number;
  /** Names of the migrations this call applied (empty when another process did, or none were due). */
  applied: string[];
}

function writtenByNewerLi(name: string, seen: number, known: number): LedgerUnavailableError {
  return new LedgerUnavailableError(name, `written by a newer li (schema ${seen}, this li knows ${known}); upgrade li`);
}

/** The version row, or null when li's schema or its version table does not exist yet. */
export async function readVersion(sql: SQL, schema: string): Promise<number | null> {
  // A scan of the catalog, not to_regclass(): to_regclass takes no lock, so a backend that looked before
  // another process created the table keeps its cached "no such table" until its transaction ends.
  const [row] = await sql`
    SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
                   WHERE n.nspname = ${schema} AND c.relname = ${VERSION_TABLE}) AS present`;
  if (!row?.present) return null;
  const [version] = await sql.unsafe(`SELECT version FROM ${quoteIdent(schema)}.${VERSION_TABLE} WHERE id = 1`);
  return version ? Number(version.version) : 0;
}

/**
 * Two select-list columns, `present` and `version`, that read the version row only when its table exists,
 * with `$N` the table's qualified name: a statement that names a missing table fails, and the server logs
 * each failure (processes opening a fresh database together wrote one `relation … does not exist` apiece).
 * query_to_xml runs the read as a query of its own, which CASE evaluates only when to_regclass finds the table.
 */
export function versionColumnsSql(param: number): string {
  const table = `$${param}::text`;
  return (
    `to_regclass(${table}) IS NOT NULL AS present, ` +
    `substring(CASE WHEN to_regclass(${table}) IS NULL THEN NULL ELSE query_to_xml(format('SELECT version FROM %s WHERE id = 1', ${table}), false, true, '')::text END from '<version>(-?[0-9]+)</version>') AS version`
  );
}

/** The version table's qualified name, as versionColumnsSql takes it. */
export function versionTableName(schema: string): string {
  return `${quoteIdent(schema)}.${VERSION_TABLE}`;
}

/** The version as versionColumnsSql reads it: null = no table, 0 = a table without its row. */
export function versionOf(row: { present?: unknown; version?: unknown } | undefined): number | null {
  if (!row?.present) return null;
  return row.version === null || row.version === undefined ? 0 : Number(row.version);
}

/**
 * The version row in one round trip (the open of an up-to-date ledger), or null when the table is
 * missing. Outside any transaction; the locked path re-reads.
 */
async function readVersionFast(sql: SQL, schema: string): Promise<number | null> {
  const [row] = await sql.unsafe(`SELECT ${versionColumnsSql(1)}`, [versionTableName(schema)]);
  return versionOf(row);
}

/** Tables in `schema` other than li's own bookkeeping: present without a version row, they are someone else's. */
export async function foreignTables(sql: SQL, schema: string): Promise<string[]> {
  const rows = await sql`SELECT tablename FROM pg_catalog.pg_tables WHERE schemaname = ${schema} ORDER BY tablename`;
  return rows.map((r: { tablename: string }) => r.tablename).filter((t: string) => t !== VERSION_TABLE && t !== MIGRATIONS_TABLE);
}

/** Applies li's embedded migrations to the client's schema (see the module comment). */
export async function migratePg(client: PgClient, migrations: readonly EmbeddedMigration[] = MIGRATIONS): Promise<MigrateResult> {
  const { sql, name } = client;
  const schema = client.target.schema;
  const known = migrations.length;
  try {
    const seen = await readVersionFast(sql, schema);
    if (seen !== null && seen > known) throw writtenByNewerLi(name, seen, known);
    if (seen === known) return { from: seen, to: known, applied: [] };
    return await sql.begin(async (tx) => {
      await tx.unsafe(`SET LOCAL lock_timeout = '${MIGRATION_LOCK_TIMEOUT}'`);
      await tx.unsafe(`SET LOCAL statement_timeout = '${MIGRATION_STATEMENT_TIMEOUT}'`);
      await tx`SELECT pg_advisory_xact_lock(${LOCK_NAMESPACE}, hashtext(${schema}))`;
      // Under the lock: whatever another process applied before us is visible now.
      const current = await readVersion(tx, schema);
      if (current !== null && current > known) throw writtenByNewerLi(name, current, known);
      if (current === null) {
        const strangers = await foreignTables(tx, schema);
        if (strangers.length > 0) {
          throw new LedgerUnavailableError(name, `schema ${schema} holds tables that are not li's (${strangers.slice(0, 3).join(", ")}); choose another with LI_PG_SCHEMA`);
        }
      }
      const q = quoteIdent(schema);
      // Only when missing: creating a schema needs the CREATE privilege on the database, using one does not.
      const [existing] = await tx`SELECT 1 AS present FROM pg_catalog.pg_namespace WHERE nspname = ${schema}`;
      if (!existing) await tx.unsafe(`CREATE SCHEMA ${q}`);
      // The migrations name tables without a schema: they land in li's schema, whatever its name.
      await tx.unsafe(`SET LOCAL search_path TO ${q}`);
      await tx.unsafe(`CREATE TABLE IF NOT EXISTS ${MIGRATIONS_TABLE} (name text PRIMARY KEY, hash text NOT NULL, applied_at double precision NOT NULL)`);
      await tx.unsafe(`CREATE TABLE IF NOT EXISTS ${VERSION_TABLE} (id integer PRIMARY KEY CHECK (id = 1), version integer NOT NULL)`);
      const appliedRows = await tx.unsafe(`SELECT name FROM ${MIGRATIONS_TABLE}`);
      const alreadyApplied = new Set(appliedRows.map((r: { name: string }) => r.name));
      const applied: string[] = [];
      for (const migration of migrations) {
        if (alreadyApplied.has(migration.name)) continue;
        for (const statement of migration.statements) await tx.unsafe(statement);
        await tx.unsafe(`INSERT INTO ${MIGRATIONS_TABLE} (name, hash, applied_at) VALUES ($1, $2, extract(epoch from clock_timestamp()))`, [migration.name, migration.hash]);
        applied.push(migration.name);
      }
      await tx.unsafe(`INSERT INTO ${VERSION_TABLE} (id, version) VALUES (1, $1) ON CONFLICT (id) DO UPDATE SET version = EXCLUDED.version`, [known]);
      return { from: current ?? 0, to: known, applied };
    });
  } catch (error) {
    throw asPgLedgerError(error, name, client.target.password) ?? error;
  }
}
