// Connecting to a PostgreSQL ledger (SPEC §14): the session carries li's schema and timeouts; Bun's own
// environment reading cannot redirect it; and a URL's password appears in no error, message or output
// of li — searched for in every one, with a password no other text could contain by accident.

import { afterEach, expect, test } from "bun:test";
import { existsSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { connectPg, DEFAULT_LIMITS, type PgClient } from "../../../src/ledger/postgres/client.ts";
import { asPgLedgerError } from "../../../src/ledger/postgres/errors.ts";
import { migratePg, VERSION_TABLE } from "../../../src/ledger/postgres/migrate.ts";
import { resolvePgTarget } from "../../../src/ledger/postgres/options.ts";
import { pgLedgerNameOfUrl, scrubPassword } from "../../../src/ledger/postgres/redact.ts";
import { describeLocation } from "../../../src/ledger/location.ts";
import { LedgerUnavailableError } from "../../../src/util/errors.ts";
import { SETUP_PENDING_FILE } from "../../../src/legs/rundir.ts";
import { tempDir } from "../../helpers/ledger.ts";
import { li } from "../../helpers/cli.ts";
import { until } from "../../helpers/until.ts";
import { createPasswordRole, describePostgres, postgresCluster, usePostgresDatabase } from "../../helpers/postgres.ts";

/** No text li writes could contain this by accident; its URL-encoded form differs from it. */
const SECRET = "Xq7-distinct1ve:p@ss/w0rd?&=";
const ENCODED = encodeURIComponent(SECRET);

/** Every rendering of an error a log or a caller could produce. */
function renderings(error: unknown): string[] {
  const e = error as Error;
  return [String(e), e.message, e.stack ?? "", Bun.inspect(e), JSON.stringify(e), JSON.stringify({ ...e })];
}

function expectNoSecret(texts: string[], what: string): void {
  for (const text of texts) {
    for (const form of [SECRET, ENCODED, "distinct1ve"]) {
      if (text.includes(form)) throw new Error(`${what} shows the password (${form}): ${text.slice(0, 300)}`);
    }
  }
}

describePostgres("connecting to a PostgreSQL ledger (§14)", () => {
  const db = usePostgresDatabase();
  const opened: PgClient[] = [];
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((c) => c.close()));
  });
  const connect = async (url: string, env: Record<string, string | undefined> = {}) => {
    const client = await connectPg(resolvePgTarget(url, env));
    opened.push(client);
    return client;
  };
  const failure = async (url: string, env: Record<string, string | undefined> = {}): Promise<LedgerUnavailableError> => {
    const error = await connect(url, env).then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(LedgerUnavailableError);
    return error as LedgerUnavailableError;
  };

  test("the session has li's schema on its search_path, the timeouts, the idle-in-transaction limit, the server's keepalives, li's application name and no JIT", async () => {
    const client = await connect(`${db.url}&search_path=ledger`);
    const [s] = await client.sql`SELECT current_setting('search_path') AS path, current_setting('statement_timeout') AS st,
      current_setting('lock_timeout') AS lt, current_setting('idle_in_transaction_session_timeout') AS idle,
      current_setting('application_name') AS app, current_setting('jit') AS jit`;
    expect(s).toEqual({ path: '"ledger"', st: "1min", lt: "15s", idle: "15s", app: "li", jit: "off" });
    // Over TCP (the test server listens on loopback) the server takes the keepalives li asks for.
    const [k] = await client.sql`SELECT current_setting('tcp_keepalives_idle') AS idle, current_setting('tcp_keepalives_interval') AS every,
      current_setting('tcp_keepalives_count') AS count, current_setting('tcp_user_timeout') AS unacked`;
    expect(k).toEqual({ idle: "60", every: "10", count: "6", unacked: "120000" });
  });

  test("a transaction left idle past the idle-in-transaction limit is ended by the server: its next statement is a ledger failure (78, worth retrying)", async () => {
    const client = await connectPg(resolvePgTarget(db.url, {}), { limits: { ...DEFAULT_LIMITS, idleInTransactionMs: 200 }, max: 1 });
    opened.push(client);
    const watcher = await connect(db.url);
    const error = await client.sql
      .begin(async (tx) => {
        const [{ pid }] = await tx`SELECT pg_backend_pid() AS pid`;
        // A process stalled inside its transaction: the server ends the session meanwhile.
        await until("the server to end the idle transaction's session", async () => (await watcher.sql`SELECT 1 FROM pg_stat_activity WHERE pid = ${pid}`).length === 0);
        return tx`SELECT 1`;
      })
      .then(
        () => null,
        (e: unknown) => e,
      );
    const ledgerError = asPgLedgerError(error, client.name);
    expect(ledgerError?.message).toBe(
      `ledger ${client.name}: the server ended the session, idle inside a transaction past its limit: terminating connection due to idle-in-transaction timeout (SQLSTATE 25P03)`,
    );
    expect(ledgerError?.unreachable).toBe(true);
    // The pool connects again for the next call.
    expect(await client.sql`SELECT 1 AS one`).toEqual([{ one: 1 }]);
  });

  test("a statement past statement_timeout is a ledger failure (78, worth retrying) naming host, port and database", async () => {
    const client = await connectPg(resolvePgTarget(db.url, {}), { limits: { ...DEFAULT_LIMITS, statementTimeoutMs: 50, lockTimeoutMs: 50 } });
    opened.push(client);
    const error = await client.sql`SELECT pg_sleep(5)`.catch((e: unknown) => e);
    const ledgerError = asPgLedgerError(error, client.name);
    expect(ledgerError?.message).toBe(`ledger ${client.name}: statement timed out: canceling statement due to statement timeout (SQLSTATE 57014)`);
    expect(ledgerError?.unreachable).toBe(true);
  });

  test("a lock wait past lock_timeout is a ledger failure (78, worth retrying)", async () => {
    const holder = await connect(db.url);
    await holder.sql`CREATE TABLE IF NOT EXISTS public.lock_probe (id int PRIMARY KEY)`;
    await holder.sql`INSERT INTO public.lock_probe VALUES (1) ON CONFLICT DO NOTHING`;
    const waiter = await connectPg(resolvePgTarget(db.url, {}), { limits: { ...DEFAULT_LIMITS, lockTimeoutMs: 50 } });
    opened.push(waiter);
    const reserved = await holder.sql.reserve();
    try {
      await reserved`BEGIN`;
      await reserved`SELECT id FROM public.lock_probe WHERE id = 1 FOR UPDATE`;
      const error = await waiter.sql`UPDATE public.lock_probe SET id = 1 WHERE id = 1`.catch((e: unknown) => e);
      const ledgerError = asPgLedgerError(error, waiter.name);
      expect(ledgerError?.message).toBe(`ledger ${waiter.name}: lock wait timed out: canceling statement due to lock timeout (SQLSTATE 55P03)`);
      expect(ledgerError?.unreachable).toBe(true);
    } finally {
      await reserved`ROLLBACK`;
      reserved.release();
    }
  });

  test("a server that accepts the connection but never answers fails at connect_timeout, named", async () => {
    const silent = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    try {
      const error = await failure(`postgres://u:${ENCODED}@127.0.0.1:${silent.port}/nowhere?sslmode=disable&connect_timeout=1`);
      expect(error.message).toBe(`ledger postgres://127.0.0.1:${silent.port}/nowhere: connect timed out (ERR_POSTGRES_CONNECTION_TIMEOUT)`);
      expect(error.unreachable).toBe(true);
      expectNoSecret(renderings(error), "a connect timeout");
    } finally {
      silent.stop(true);
    }
  });

  test("sslmode: disable talks plain text, require and prefer use TLS, verify-full checks the server against sslrootcert", async () => {
    const { tlsCert, port } = postgresCluster();
    if (tlsCert === null) throw new Error("openssl is needed for the TLS cases (the test cluster offers TLS with a self-signed certificate)");
    const usesTls = async (url: string) => {
      const client = await connect(url);
      const [row] = await client.sql`SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()`;
      return row.ssl as boolean;
    };
    const base = `postgres://postgres@127.0.0.1:${port}/${db.name}`;
    expect(await usesTls(`${base}?sslmode=disable`)).toBe(false);
    expect(await usesTls(`${base}?sslmode=prefer`)).toBe(true);
    expect(await usesTls(`${base}?sslmode=require`)).toBe(true);
    expect(await usesTls(`${base}?sslmode=verify-full&sslrootcert=${encodeURIComponent(tlsCert)}`)).toBe(true);
    // PGSSLMODE and PGSSLROOTCERT do the same when the URL says nothing.
    const client = await connect(base, { PGSSLMODE: "verify-full", PGSSLROOTCERT: tlsCert });
    expect((await client.sql`SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()`)[0].ssl).toBe(true);
    // A certificate nobody vouches for: verify-full refuses the server (78), require does not check it.
    const unverified = await failure(`${base}?sslmode=verify-full`);
    expect(unverified.message).toBe(`ledger postgres://127.0.0.1:${port}/${db.name}: the server's TLS certificate was refused: self signed certificate (DEPTH_ZERO_SELF_SIGNED_CERT)`);
  });

  test("a host that is a directory is the server's unix socket (in the URL, as ?host= or as PGHOST)", async () => {
    const { socketDir, port } = postgresCluster();
    const viaSocket = async (url: string, env: Record<string, string> = {}) => {
      const client = await connect(url, env);
      const [row] = await client.sql`SELECT inet_server_addr() IS NULL AS local, current_database() AS db`;
      return row;
    };
    const expected = { local: true, db: db.name };
    expect(await viaSocket(`postgres://postgres@${encodeURIComponent(socketDir)}:${port}/${db.name}`)).toEqual(expected);
    expect(await viaSocket(`postgres://postgres@/${db.name}?host=${encodeURIComponent(socketDir)}&port=${port}`)).toEqual(expected);
    expect(await viaSocket(`postgres:///${db.name}`, { PGHOST: socketDir, PGPORT: String(port), PGUSER: "postgres" })).toEqual(expected);
  });

  test("DATABASE_URL, PGDATABASE and PGHOST in the environment cannot redirect a resolved target", async () => {
    const saved = { DATABASE_URL: process.env.DATABASE_URL, PGDATABASE: process.env.PGDATABASE, PGHOST: process.env.PGHOST, PGPASSWORD: process.env.PGPASSWORD };
    Object.assign(process.env, { DATABASE_URL: "postgres://intruder:bad@127.0.0.2:1/elsewhere", PGDATABASE: "elsewhere", PGHOST: "127.0.0.2", PGPASSWORD: "bad" });
    try {
      const client = await connect(db.url, {});
      const [row] = await client.sql`SELECT current_database() AS db, current_user AS who`;
      expect(row).toEqual({ db: db.name, who: "postgres" });
    } finally {
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
  });

  test("the PG* variables li was given complete a URL that names only the server", async () => {
    const { port } = postgresCluster();
    const client = await connect(`postgres://127.0.0.1:${port}`, { PGDATABASE: db.name, PGUSER: "postgres", PGSSLMODE: "disable" });
    const [row] = await client.sql`SELECT current_database() AS db`;
    expect(row.db).toBe(db.name);
  });

  test("a password in the URL, in ?password=, in PGPASSWORD or in the password file logs in, and appears in no error or output", async () => {
    const role = await createPasswordRole(SECRET, db.name);
    const { port } = postgresCluster();
    const base = `127.0.0.1:${port}/${db.name}`;
    const texts: string[] = [];
    // libpq's format: a colon (and a backslash) inside a field is escaped.
    const passfile = join(tempDir(), "pgpass");
    writeFileSync(passfile, `127.0.0.1:${port}:${db.name}:${role}:${SECRET.replace(/[\\:]/g, (c) => `\\${c}`)}\n`, { mode: 0o600 });

    for (const [url, env] of [
      [`postgres://${role}:${ENCODED}@${base}?sslmode=disable`, {}],
      [`postgres://${role}@${base}?sslmode=disable&password=${ENCODED}`, {}],
      [`postgres://${role}@${base}?sslmode=disable`, { PGPASSWORD: SECRET }],
      [`postgres://${role}@${base}?sslmode=disable`, { PGPASSFILE: passfile }],
    ] as const) {
      const client = await connect(url, env);
      const [row] = await client.sql`SELECT current_user AS who`;
      expect(row.who).toBe(role);
      texts.push(client.name, Bun.inspect(client.target.schema), describeLocation({ kind: "postgres", url }), pgLedgerNameOfUrl(url));
      // A refusal after connecting (here: a newer li's ledger) names the ledger the same way.
      await migratePg(client);
      await client.sql.unsafe(`UPDATE ${VERSION_TABLE} SET version = version + 100`);
      const newer = await migratePg(client).catch((e: unknown) => e);
      expect(newer).toBeInstanceOf(LedgerUnavailableError);
      texts.push(...renderings(newer));
      await client.sql.unsafe(`DROP SCHEMA li CASCADE`);
    }

    // A wrong password: refused, named, and neither password shows.
    const wrong = await failure(`postgres://${role}:${encodeURIComponent(`${SECRET}-wrong`)}@${base}?sslmode=disable`);
    expect(wrong.message).toBe(`ledger postgres://127.0.0.1:${port}/${db.name}: authentication failed: password authentication failed for user "${role}" (SQLSTATE 28P01)`);
    texts.push(...renderings(wrong));

    // Nobody listening; a malformed URL; an unknown parameter; a bad sslmode — each with the password in it.
    const closedPort = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    const unusedPort = closedPort.port;
    closedPort.stop(true);
    const refused = await failure(`postgres://${role}:${ENCODED}@127.0.0.1:${unusedPort}/${db.name}?sslmode=disable`);
    expect(refused.message).toBe(`ledger postgres://127.0.0.1:${unusedPort}/${db.name}: connection refused (is the server running?) (ERR_POSTGRES_CONNECTION_REFUSED)`);
    expect(refused.unreachable).toBe(true);
    texts.push(...renderings(refused));
    for (const url of [`postgres://${role}:${ENCODED}@${base}?bogus=1`, `postgres://${role}:${ENCODED}@${base}?sslmode=${ENCODED}`, `postgres://${role}:${SECRET}@${base}`]) {
      texts.push(...renderings(await failure(url)), describeLocation({ kind: "postgres", url }));
    }
    expect(texts.length).toBeGreaterThan(20);
    expectNoSecret(texts, "li's errors and names");
  });

  test("the compiled binary, given such a URL by LI_DB or --db, shows the password in none of its outputs", async () => {
    const { port } = postgresCluster();
    const url = `postgres://someone:${ENCODED}@127.0.0.1:${port}/${db.name}?sslmode=disable`;
    // A home of its own: without one li would use the real ~/.li.
    const home = tempDir("li-secret-");
    const runs = [
      await li(["ls"], { home, env: { LI_DB: url } }),
      await li(["ls", "--json"], { home, env: { LI_DB: url } }),
      await li(["--db", url, "show", "0000"], { home }),
      await li(["wait", "--timeout", "1", "0000"], { home, env: { LI_DB: url } }),
      await li(["agent", "--run-id", "foreground", "--", "true"], { home, env: { LI_DB: url } }),
      await li(["agent", "--detach", "--run-id", "detached", "--", "true"], { home, env: { LI_DB: url } }),
    ];
    // No such role: every command is refused (78 for all but the foreground leg, which runs unrecorded),
    // naming the ledger by host, port and database. test/ledger/postgres/cli.test.ts runs them with a real password.
    for (const run of runs) expect(`${run.code} ${run.stderr}`).toContain(`ledger postgres://127.0.0.1:${port}/${db.name}: authentication failed`);
    expectNoSecret(runs.flatMap((r) => [r.stdout, r.stderr]), "the binary's output");
    // The foreground leg ran unrecorded (§16), --run-id and all: the run id's check could not ask the
    // ledger, and that stops no leg. It keeps its run directory; the refused detached one ran nothing
    // and leaves none (no orphan for li watch to find an hour later).
    const [foreground, detached] = runs.slice(-2);
    expect([foreground!.code, detached!.code]).toEqual([0, 78]);
    expect(foreground!.stderr).toContain("; the command runs unrecorded");
    expect(readdirSync(join(home, "runs"))).toEqual(["foreground"]);
    expect(existsSync(join(home, "runs", "foreground", "run.json"))).toBe(true);
    expect(existsSync(join(home, "runs", "foreground", SETUP_PENDING_FILE))).toBe(false);
  });

  test("the scrubber removes the password in every form it may take in someone else's message", () => {
    expect(scrubPassword(`a ${SECRET} b ${ENCODED} c`, SECRET)).toBe("a *** b *** c");
    expect(scrubPassword(`a ${SECRET}`, ENCODED)).toBe("a ***");
    expect(scrubPassword("nothing here", undefined)).toBe("nothing here");
  });
});
