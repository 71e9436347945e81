// The PostgreSQL migration runner (SPEC §3, §14): a fresh database gets li's complete schema — the same
// tables, columns, CHECK constraints and indexes as the SQLite ledger — even with eight processes
// migrating at once; a ledger written by a newer li, or a schema holding someone else's tables, is refused.

import { expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { SQL } from "bun";
import { join } from "node:path";
import { POLICY_SPECS, type EntityKind } from "../../../src/lifecycle/policy.ts";
import { connectPg, type PgClient } from "../../../src/ledger/postgres/client.ts";
import { LOCK_NAMESPACE, migratePg, VERSION_TABLE } from "../../../src/ledger/postgres/migrate.ts";
import { MIGRATIONS } from "../../../src/ledger/postgres/migrations.gen.ts";
import { resolvePgTarget } from "../../../src/ledger/postgres/options.ts";
import { applyPragmas, migrate as migrateSqlite } from "../../../src/ledger/sqlite/migrate.ts";
import { LedgerUnavailableError } from "../../../src/util/errors.ts";
import { describePostgres, postgresCluster, usePostgresDatabase } from "../../helpers/postgres.ts";
import { li } from "../../helpers/cli.ts";
import { tempDir } from "../../helpers/ledger.ts";
import { until } from "../../helpers/until.ts";

/** What to do when the SQLite schema changed and this test says the two no longer match. */
const SCHEMA_DRIFT =
  "The PostgreSQL schema is out of step with the SQLite schema. Make the same change in src/ledger/postgres/schema.ts " +
  "(below its header it is the SQLite file in the pg dialect), then `npm run db:generate` (writes drizzle/postgres and " +
  "src/ledger/postgres/migrations.gen.ts). Difference:";
const WORKER = join(import.meta.dir, "../../helpers/workers/pg-migrate.ts");
let schemaCounter = 0;
const freshSchema = () => `m${process.pid}_${++schemaCounter}`;

/** One table's shape, in words both catalogs can be brought to. */
interface TableShape {
  columns: string[];
  primaryKey: string[];
  checks: string[];
  indexes: string[];
}

/** SQLite's REAL and INTEGER, as their PostgreSQL counterparts are named in schema.ts. */
function sameFamily(pgType: string): string {
  return pgType === "double precision" ? "real" : pgType === "bigint" || pgType === "integer" ? "integer" : pgType;
}

function sqliteShape(): Map<string, TableShape> {
  const db = new Database(":memory:");
  applyPragmas(db, 1000);
  migrateSqlite(db, ":memory:");
  const shapes = new Map<string, TableShape>();
  const tables = db.query<{ name: string; sql: string }, []>("SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_\\_li%' ESCAPE '\\' AND name NOT LIKE 'sqlite_%'").all();
  for (const { name, sql } of tables) {
    const info = db.query<{ name: string; type: string; notnull: number; pk: number }, []>(`PRAGMA table_info(${name})`).all();
    const indexes = db
      .query<{ name: string; unique: number; partial: number; origin: string }, []>(`PRAGMA index_list(${name})`)
      .all()
      .filter((i) => i.origin === "c")
      .map((i) => {
        const cols = db.query<{ name: string }, []>(`PRAGMA index_info(${i.name})`).all().map((c) => c.name);
        return `${i.name}${i.unique ? " unique" : ""}${i.partial ? " partial" : ""} (${cols.join(", ")})`;
      });
    shapes.set(name, {
      columns: info.map((c) => `${c.name} ${c.type.toLowerCase()}${c.notnull || c.pk ? " not null" : ""}`).sort(),
      primaryKey: info.filter((c) => c.pk > 0).sort((a, b) => a.pk - b.pk).map((c) => c.name),
      checks: [...sql.matchAll(/CONSTRAINT "([^"]+)" CHECK/g)].map((m) => m[1]!).sort(),
      indexes: indexes.sort(),
    });
  }
  db.close();
  return shapes;
}

async function pgShape(sql: SQL, schema: string): Promise<Map<string, TableShape>> {
  const shapes = new Map<string, TableShape>();
  const tables = await sql`SELECT tablename FROM pg_tables WHERE schemaname = ${schema} AND tablename NOT LIKE '\\_\\_li%'`;
  for (const { tablename } of tables as { tablename: string }[]) {
    const columns = await sql`SELECT column_name, data_type, is_nullable FROM information_schema.columns WHERE table_schema = ${schema} AND table_name = ${tablename}`;
    const pk = await sql`
      SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
      WHERE i.indrelid = ${`"${schema}"."${tablename}"`}::regclass AND i.indisprimary ORDER BY array_position(i.indkey, a.attnum)`;
    const checks = await sql`
      SELECT conname FROM pg_constraint WHERE conrelid = ${`"${schema}"."${tablename}"`}::regclass AND contype = 'c'`;
    const indexes = await sql`
      SELECT c.relname AS name, i.indisunique AS uniq, i.indpred IS NOT NULL AS partial,
             array_to_string(ARRAY(SELECT a.attname FROM unnest(i.indkey) WITH ORDINALITY k(attnum, n)
               JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum ORDER BY k.n), ', ') AS cols
      FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
      WHERE i.indrelid = ${`"${schema}"."${tablename}"`}::regclass AND NOT i.indisprimary`;
    shapes.set(tablename, {
      columns: (columns as { column_name: string; data_type: string; is_nullable: string }[])
        .map((c) => `${c.column_name} ${sameFamily(c.data_type)}${c.is_nullable === "NO" ? " not null" : ""}`)
        .sort(),
      primaryKey: (pk as { attname: string }[]).map((r) => r.attname),
      checks: (checks as { conname: string }[]).map((r) => r.conname).sort(),
      indexes: (indexes as { name: string; uniq: boolean; partial: boolean; cols: string }[])
        .map((i) => `${i.name}${i.uniq ? " unique" : ""}${i.partial ? " partial" : ""} (${i.cols})`)
        .sort(),
    });
  }
  return shapes;
}

describePostgres("the PostgreSQL migration runner (§14)", () => {
  const db = usePostgresDatabase();
  const clients: PgClient[] = [];
  const open = async (schema: string) => {
    const client = await connectPg(resolvePgTarget(`${db.url}&search_path=${schema}`));
    clients.push(client);
    return client;
  };
  const closeAll = async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
  };

  test("a fresh database gets the SQLite ledger's tables, columns, CHECK constraints and indexes", async () => {
    const schema = freshSchema();
    const client = await open(schema);
    const result = await migratePg(client);
    expect(result).toEqual({ from: 0, to: MIGRATIONS.length, applied: MIGRATIONS.map((m) => m.name) });
    const expected = sqliteShape();
    const actual = await pgShape(client.sql, schema);
    try {
      expect([...actual.keys()].sort()).toEqual([...expected.keys()].sort());
      for (const [table, shape] of expected) expect({ table, ...actual.get(table) }).toEqual({ table, ...shape });
    } catch (error) {
      throw new Error(`${SCHEMA_DRIFT}\n${(error as Error).message}`);
    }
    // Nothing of li's lands anywhere but its own schema.
    const [elsewhere] = await client.sql`SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public'`;
    expect(elsewhere.n).toBe(0);
    await closeAll();
  });

  test("the CHECK constraints accept exactly the registry's statuses", async () => {
    const schema = freshSchema();
    const client = await open(schema);
    await migratePg(client);
    const tables: Record<EntityKind, string> = { session: "sessions", invocation: "invocations", schedule_run: "schedule_runs", play: "plays", show: "shows", team: "teams" };
    for (const [kind, table] of Object.entries(tables) as [EntityKind, string][]) {
      for (const status of POLICY_SPECS[kind].statuses) {
        await client.sql.unsafe(`INSERT INTO ${table} (id, status, created_at, updated_at) VALUES ($1, $2, 0, 0)`, [`${kind}-${status}`, status]);
      }
      const refused = await client.sql.unsafe(`INSERT INTO ${table} (id, status, created_at, updated_at) VALUES ('x', 'no_such_status', 0, 0)`).catch((e: Error) => e);
      expect((refused as { errno?: string }).errno).toBe("23514");
    }
    await closeAll();
  });

  test("a second open costs one read and applies nothing", async () => {
    const client = await open(freshSchema());
    await migratePg(client);
    expect(await migratePg(client)).toEqual({ from: MIGRATIONS.length, to: MIGRATIONS.length, applied: [] });
    await closeAll();
  });

  /** `count` migrator processes on `url`, connected and waiting for go(). */
  async function migrators(count: number, url: string) {
    const workers = Array.from({ length: count }, () => Bun.spawn([process.execPath, WORKER, url], { stdin: "pipe", stdout: "pipe", stderr: "pipe" }));
    const outputs = workers.map(() => "");
    const pumps = workers.map(async (w, i) => {
      const decoder = new TextDecoder();
      for await (const chunk of w.stdout) outputs[i] += decoder.decode(chunk);
    });
    await until(`${count} migrators connected`, () => outputs.every((o) => o.startsWith("ready\n")), { timeoutMs: 60_000 });
    return {
      go() {
        for (const w of workers) {
          w.stdin.write("go\n");
          w.stdin.flush();
        }
      },
      async results() {
        const codes = await Promise.all(workers.map((w) => w.exited));
        await Promise.all(pumps);
        return { codes, results: outputs.map((o) => JSON.parse(o.split("\n")[1] ?? "{}") as { applied?: string[]; error?: string }) };
      },
    };
  }

  /** Runs `whileHeld` holding the migrators' advisory lock of `schema`, then commits what it did. */
  async function holdingMigrationLock(client: PgClient, schema: string, whileHeld: (tx: SQL) => Promise<void>): Promise<void> {
    const reserved = await client.sql.reserve();
    try {
      await reserved`BEGIN`;
      await reserved`SELECT pg_advisory_xact_lock(${LOCK_NAMESPACE}, hashtext(${schema}))`;
      await whileHeld(reserved);
      await reserved`COMMIT`;
    } finally {
      reserved.release();
    }
  }

  const waitersOnLock = (client: PgClient, count: number) =>
    until(
      `${count} migrator(s) waiting on the advisory lock`,
      async () => {
        const [row] = await client.sql`SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND classid = ${LOCK_NAMESPACE}`;
        return row.n === count;
      },
      { timeoutMs: 60_000 },
    );

  test("eight processes migrating one fresh database at once all succeed, and one of them applies", async () => {
    const schema = freshSchema();
    // The test holds the migrators' lock until all eight are queued on it: they provably contend.
    const holder = await open(schema);
    const eight = await migrators(8, `${db.url}&search_path=${schema}`);
    await holdingMigrationLock(holder, schema, async () => {
      eight.go();
      await waitersOnLock(holder, 8);
    });
    const { codes, results } = await eight.results();
    expect({ codes, results }).toEqual({ codes: [0, 0, 0, 0, 0, 0, 0, 0], results });
    expect(results.filter((r) => r.applied && r.applied.length === MIGRATIONS.length)).toHaveLength(1);
    expect(results.filter((r) => r.applied && r.applied.length === 0)).toHaveLength(7);
    const actual = await pgShape(holder.sql, schema);
    expect([...actual.keys()].sort()).toEqual([...sqliteShape().keys()].sort());
    const [applied] = await holder.sql.unsafe(`SELECT count(*)::int AS n FROM "${schema}".__li_migrations`);
    expect(applied.n).toBe(MIGRATIONS.length);
    await closeAll();
  });

  test("eight li processes opening one fresh schema at once leave no failed statement in the server's log (none names a table before it exists)", async () => {
    const schema = freshSchema();
    const logFrom = Bun.file(postgresCluster().serverLog).size;
    const url = `${db.url}&search_path=${schema}`;
    const runs = await Promise.all(Array.from({ length: 8 }, () => li(["agent", "--", "true"], { home: tempDir(), env: { LI_DB: url } })));
    expect(runs.map((r) => r.code)).toEqual([0, 0, 0, 0, 0, 0, 0, 0]);
    const log = (await Bun.file(postgresCluster().serverLog).text()).slice(logFrom);
    expect(log.split("\n").filter((line) => line.includes(schema) || /does not exist/.test(line))).toEqual([]);
    await closeAll();
  });

  test("a newer li's version row committed while a migrator waits for the lock is seen under the lock: refused", async () => {
    const schema = freshSchema();
    const holder = await open(schema);
    const one = await migrators(1, `${db.url}&search_path=${schema}`);
    await holdingMigrationLock(holder, schema, async (tx) => {
      one.go();
      await waitersOnLock(holder, 1);
      await tx.unsafe(`CREATE SCHEMA "${schema}"`);
      await tx.unsafe(`CREATE TABLE "${schema}".${VERSION_TABLE} (id integer PRIMARY KEY, version integer NOT NULL)`);
      await tx.unsafe(`INSERT INTO "${schema}".${VERSION_TABLE} VALUES (1, ${MIGRATIONS.length + 1})`);
    });
    const { codes, results } = await one.results();
    expect(codes).toEqual([1]);
    expect(results[0]?.error).toContain(`written by a newer li (schema ${MIGRATIONS.length + 1}, this li knows ${MIGRATIONS.length})`);
    const tables = await holder.sql`SELECT tablename FROM pg_tables WHERE schemaname = ${schema}`;
    expect(tables.map((t: { tablename: string }) => t.tablename)).toEqual([VERSION_TABLE]);
    await closeAll();
  });

  test("a ledger written by a newer li is refused (78) and left as it was", async () => {
    const schema = freshSchema();
    const client = await open(schema);
    await migratePg(client);
    await client.sql.unsafe(`UPDATE "${schema}".${VERSION_TABLE} SET version = ${MIGRATIONS.length + 1}`);
    const error = await migratePg(client).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LedgerUnavailableError);
    expect((error as LedgerUnavailableError).exitCode).toBe(78);
    expect((error as Error).message).toBe(
      `ledger ${client.name}: written by a newer li (schema ${MIGRATIONS.length + 1}, this li knows ${MIGRATIONS.length}); upgrade li`,
    );
    const [row] = await client.sql.unsafe(`SELECT version FROM "${schema}".${VERSION_TABLE}`);
    expect(row.version).toBe(MIGRATIONS.length + 1);
    await closeAll();
  });

  test("a schema that holds someone else's tables is refused, and nothing is created in it", async () => {
    const schema = freshSchema();
    const client = await open(schema);
    await client.sql.unsafe(`CREATE SCHEMA "${schema}"; CREATE TABLE "${schema}".orders (id int)`);
    const error = await migratePg(client).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LedgerUnavailableError);
    expect((error as Error).message).toBe(`ledger ${client.name}: schema ${schema} holds tables that are not li's (orders); choose another with LI_PG_SCHEMA`);
    const tables = await client.sql`SELECT tablename FROM pg_tables WHERE schemaname = ${schema}`;
    expect(tables.map((t: { tablename: string }) => t.tablename)).toEqual(["orders"]);
    await closeAll();
  });

  test("LI_PG_SCHEMA chooses the schema when the URL names none; the default is li", async () => {
    const named = await connectPg(resolvePgTarget(db.url, { LI_PG_SCHEMA: "li_other" }));
    const byDefault = await connectPg(resolvePgTarget(db.url, {}));
    clients.push(named, byDefault);
    await migratePg(named);
    await migratePg(byDefault);
    const rows = await named.sql`SELECT DISTINCT schemaname FROM pg_tables WHERE tablename = 'sessions' ORDER BY schemaname`;
    expect(rows.map((r: { schemaname: string }) => r.schemaname)).toEqual(expect.arrayContaining(["li", "li_other"]));
    const [path] = await byDefault.sql`SELECT current_schema() AS s`;
    expect(path.s).toBe("li");
    await closeAll();
  });
});
