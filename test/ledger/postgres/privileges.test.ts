// The everyday role of a PostgreSQL ledger (docs/postgres.md "One-time setup"): once an owner has run the
// migrations, a role with CONNECT on the database, USAGE on li's schema and SELECT, INSERT, UPDATE, DELETE
// on its tables is all li needs — it opens the ledger without migrating, and it cannot change the schema.
// A newer li whose migrations are due is refused for that role (78, naming the ledger), not half-applied.

import { expect, test } from "bun:test";
import { connectPg, type PgClient } from "../../../src/ledger/postgres/client.ts";
import { migratePg, MIGRATIONS_TABLE, VERSION_TABLE } from "../../../src/ledger/postgres/migrate.ts";
import { MIGRATIONS } from "../../../src/ledger/postgres/migrations.gen.ts";
import { resolvePgTarget } from "../../../src/ledger/postgres/options.ts";
import { LedgerUnavailableError } from "../../../src/util/errors.ts";
import { li } from "../../helpers/cli.ts";
import { tempDir } from "../../helpers/ledger.ts";
import { asSuperuser, describePostgres, postgresCluster, usePostgresDatabase } from "../../helpers/postgres.ts";

/** The grants docs/postgres.md tells an operator to run as the owner; keep the two in step. */
function everydayGrants(owner: string, role: string, database: string, schema: string): string[] {
  return [
    `GRANT CONNECT ON DATABASE "${database}" TO ${role}`,
    `GRANT USAGE ON SCHEMA "${schema}" TO ${role}`,
    `GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA "${schema}" TO ${role}`,
    // ALL TABLES covers the tables that exist now; this covers those a later li's migrations add.
    `ALTER DEFAULT PRIVILEGES FOR ROLE ${owner} IN SCHEMA "${schema}" GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO ${role}`,
  ];
}

describePostgres("the everyday role of a PostgreSQL ledger", () => {
  const db = usePostgresDatabase();
  const schema = "li";
  let role = "";
  const clients: PgClient[] = [];
  const connectAs = async (user: string): Promise<PgClient> => {
    const { port } = postgresCluster();
    const client = await connectPg(resolvePgTarget(`postgres://${user}@127.0.0.1:${port}/${db.name}?sslmode=disable&search_path=${schema}`, {}));
    clients.push(client);
    return client;
  };

  test("after the owner migrated, the everyday role opens the ledger without migrating and reads and writes every table", async () => {
    const owner = await connectAs("postgres");
    expect((await migratePg(owner)).applied).toEqual(MIGRATIONS.map((m) => m.name));
    role = `li_app_${crypto.randomUUID().replace(/-/g, "").slice(0, 8)}`;
    await asSuperuser(async (sql) => {
      await sql.unsafe(`CREATE ROLE ${role} LOGIN`);
    });
    await asSuperuser(async (sql) => {
      for (const grant of everydayGrants("postgres", role, db.name, schema)) await sql.unsafe(grant);
    }, db.name);

    const app = await connectAs(role);
    expect(await migratePg(app)).toEqual({ from: MIGRATIONS.length, to: MIGRATIONS.length, applied: [] });
    const tables = (await app.sql`SELECT tablename FROM pg_tables WHERE schemaname = ${schema} ORDER BY tablename`).map((r: { tablename: string }) => r.tablename);
    for (const table of tables) {
      const [row] = await app.sql.unsafe(`SELECT has_table_privilege(current_user, '"${schema}"."${table}"', 'SELECT,INSERT,UPDATE,DELETE') AS ok`);
      expect({ table, ok: row.ok }).toEqual({ table, ok: true });
    }
    // Advisory locks (seq, the watcher lock) and NOTIFY need no grant: the role can take and send them.
    await app.sql.begin(async (tx) => {
      await tx`SELECT pg_advisory_xact_lock(${0x6c69}, hashtext(${schema} || ':seq'))`;
      await tx`SELECT pg_notify('li_changes', 'probe')`;
    });
  });

  test("li's commands run as the everyday role: legs, views, repairs, consumers, handlers, delivery, sweeps and the prune", async () => {
    const { port } = postgresCluster();
    const env = { LI_DB: `postgres://${role}@127.0.0.1:${port}/${db.name}?sslmode=disable&search_path=${schema}` };
    const home = tempDir("li-app-");
    const run = async (args: string[]) => {
      const r = await li(args, { home, env });
      return { args: args.join(" "), code: r.code, stderr: r.stderr };
    };
    const agent = await li(["agent", "--json", "--", "true"], { home, env });
    expect({ code: agent.code, stderr: agent.stderr }).toEqual({ code: 0, stderr: agent.stderr });
    const session = (JSON.parse(agent.stdout) as { session_id: string }).session_id;
    const invocation = (await li(["state", "create", "invocation"], { home, env })).stdout.trim();
    const results = [
      await run(["ls"]),
      await run(["show", session, "--json"]),
      await run(["wait", session]),
      await run(["logs", session]),
      await run(["state", "transitions", session]),
      await run(["state", "set-status", "invocation", invocation, "--status", "completed", "--reason", "run.completed.ok"]),
      await run(["events", "consumers", "add", "ci"]),
      await run(["events", "owed", "--consumer=ci", "--json"]),
      await run(["events", "handlers", "add", "noop", "--", "/bin/true"]),
      await run(["agent", "--notify", "/bin/true {status}", "--", "true"]),
      await run(["events", "deliver"]),
      await run(["events", "handlers", "rm", "noop"]),
      await run(["state", "doctor", "--dry-run"]),
      await run(["state", "prune", "--keep-days=0"]),
    ];
    expect(results.filter((r) => r.code !== 0)).toEqual([]);
  });

  test("the everyday role cannot change the schema", async () => {
    const app = await connectAs(role);
    const refused = await app.sql.unsafe(`CREATE TABLE "${schema}".intruder (id int)`).catch((e: unknown) => e);
    expect((refused as { errno?: string }).errno).toBe("42501");
    const dropped = await app.sql.unsafe(`DROP TABLE "${schema}".sessions`).catch((e: unknown) => e);
    expect((dropped as { errno?: string }).errno).toBe("42501");
  });

  test("a newer li whose migration is due is refused for the everyday role (78, naming the ledger), and nothing is applied", async () => {
    const app = await connectAs(role);
    const next = { name: "9999_newer", hash: "0".repeat(64), statements: [`CREATE TABLE newer_things (id text PRIMARY KEY)`] };
    const error = await migratePg(app, [...MIGRATIONS, next]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LedgerUnavailableError);
    expect((error as LedgerUnavailableError).exitCode).toBe(78);
    expect((error as Error).message).toStartWith(`ledger ${app.name}: permission denied: `);
    const owner = await connectAs("postgres");
    const [version] = await owner.sql.unsafe(`SELECT version FROM "${schema}".${VERSION_TABLE}`);
    expect(version.version).toBe(MIGRATIONS.length);
    const [applied] = await owner.sql.unsafe(`SELECT count(*)::int AS n FROM "${schema}".${MIGRATIONS_TABLE}`);
    expect(applied.n).toBe(MIGRATIONS.length);
    // The owner then applies it; the default privileges give the everyday role the new table.
    expect((await migratePg(owner, [...MIGRATIONS, next])).applied).toEqual([next.name]);
    expect(await migratePg(app, [...MIGRATIONS, next])).toEqual({ from: MIGRATIONS.length + 1, to: MIGRATIONS.length + 1, applied: [] });
    await app.sql.unsafe(`INSERT INTO newer_things (id) VALUES ('ok')`);
    await Promise.all(clients.splice(0).map((c) => c.close()));
  });
});
