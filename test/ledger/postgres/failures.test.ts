// A PostgreSQL failure that reaches the CLI's error mapping raw (no adapter boundary converted it) is
// still exit 78 naming host, port and database, never 70 (SPEC §16, §18), and the password of the
// ledger's URL is scrubbed from the driver's text (§14).

import { afterAll, expect, test } from "bun:test";
import { SQL } from "bun";
import { exitFor } from "../../../src/cli/exit.ts";
import { ledgerFailureOf } from "../../../src/ledger/failures.ts";
import { createPasswordRole, describePostgres, postgresCluster, usePostgresDatabase } from "../../helpers/postgres.ts";

const SECRET = "Kv3-f41lure:p@ss/w0rd";

describePostgres("PostgreSQL failures at the CLI's error mapping", () => {
  const db = usePostgresDatabase();
  const clients: SQL[] = [];
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
  });

  /** A raw Bun SQL error, as a statement of li's could raise it outside an adapter boundary. */
  async function rawError(url: string, statement: string): Promise<unknown> {
    const sql = new SQL({ url, max: 1 });
    clients.push(sql);
    return sql.unsafe(statement).then(
      () => {
        throw new Error(`expected ${statement} to fail`);
      },
      (error: unknown) => error,
    );
  }

  test("a server out of resources is 78 naming the ledger, with the URL's password scrubbed from the server's text", async () => {
    const role = await createPasswordRole(SECRET, db.name);
    const { port } = postgresCluster();
    const url = `postgres://${role}:${encodeURIComponent(SECRET)}@127.0.0.1:${port}/${db.name}?sslmode=disable`;
    const error = await rawError(url, `DO $$ BEGIN RAISE EXCEPTION USING ERRCODE = '53100', MESSAGE = 'no space left near ${SECRET}'; END $$`);
    expect(exitFor(error).exit).toBe(78);
    // exit.ts hands the classifier the password of this process's ledger URL (location.ts passwordOfLocation).
    const failure = ledgerFailureOf(error, `postgres://127.0.0.1:${port}/${db.name}`, SECRET);
    expect(failure?.message).toStartWith(`ledger postgres://127.0.0.1:${port}/${db.name}: the server is out of resources`);
    expect(failure?.message).toContain("no space left near ***");
    expect(failure?.message).not.toContain(SECRET);
  });

  test("a pooler refusing li's startup parameters or its login is a refusal (naming what li sends); PgBouncer's other protocol errors stay outages", async () => {
    // PgBouncer answers both with SQLSTATE 08P01: only its configuration refusal is not worth retrying.
    const refused = await rawError(db.url, "DO $$ BEGIN RAISE EXCEPTION USING ERRCODE = '08P01', MESSAGE = 'unsupported startup parameter: search_path'; END $$");
    expect(exitFor(refused).exit).toBe(78);
    const refusal = ledgerFailureOf(refused, "postgres://h:6432/db");
    expect(refusal).toMatchObject({ exitCode: 78, unreachable: false });
    expect(refusal?.message).toBe(
      `ledger postgres://h:6432/db: a pooler refused li's session settings (li sends search_path, statement_timeout, lock_timeout, ` +
        `idle_in_transaction_session_timeout, tcp_keepalives_idle, tcp_keepalives_interval, tcp_keepalives_count, tcp_user_timeout and jit at startup: ` +
        `configure the pooler to pass or ignore them, docs/postgres.md "Behind a connection pooler"): unsupported startup parameter: search_path (SQLSTATE 08P01)`,
    );
    // PgBouncer's own login refusals: a wrong password, an unknown user, a database it does not serve.
    for (const [text, reason] of [
      ["SASL authentication failed", "authentication failed (at the pooler)"],
      ['"trust" authentication failed', "authentication failed (at the pooler)"],
      ["no such user: someone", "authentication failed (at the pooler)"],
      ["no such database: elsewhere", "no such database (at the pooler)"],
    ] as const) {
      const login = await rawError(db.url, `DO $$ BEGIN RAISE EXCEPTION USING ERRCODE = '08P01', MESSAGE = '${text.replace(/'/g, "''")}'; END $$`);
      expect(ledgerFailureOf(login, "postgres://h:6432/db")).toMatchObject({ unreachable: false, message: `ledger postgres://h:6432/db: ${reason}: ${text} (SQLSTATE 08P01)` });
    }
    const serverDown = await rawError(db.url, "DO $$ BEGIN RAISE EXCEPTION USING ERRCODE = '08P01', MESSAGE = 'server login has been failing, try again later (server_login_retry)'; END $$");
    expect(ledgerFailureOf(serverDown, "postgres://h:6432/db")).toMatchObject({ exitCode: 78, unreachable: true });
  });

  test("a statement timeout is a ledger failure worth retrying; li's own SQL mistakes are not the ledger's", async () => {
    const timeout = await rawError(db.url, "SET statement_timeout = 1; SELECT pg_sleep(1)");
    expect(ledgerFailureOf(timeout, "postgres://h:5432/db")).toMatchObject({ exitCode: 78, unreachable: true });
    const mistake = await rawError(db.url, "SELECT * FROM no_such_table_of_li");
    expect(ledgerFailureOf(mistake, "postgres://h:5432/db")).toBeNull();
  });
});
