// A throwaway PostgreSQL cluster on loopback for the test run (one per test process, started on first
// use, stopped after the last test file by the preload postgres-teardown.ts) and a fresh database per test file. When PostgreSQL is not
// installed the PostgreSQL suites say loudly that they did not run; under CI they fail instead, because
// .ci/run installs it. LI_TEST_PG_BIN names the server's bin directory when it is not under
// /usr/lib/postgresql/*/bin (Debian's layout) or on PATH.

import { afterAll, beforeAll, describe, test } from "bun:test";
import { SQL } from "bun";
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { removeInBackground } from "./temp-dirs.ts";
import { commandLine, isAlive } from "./until.ts";

/** The role every pw_* test role belongs to: pg_hba asks these for a password, everyone else is trusted. */
export const PASSWORD_ROLE_GROUP = "li_password_users";

export interface PgCluster {
  host: "127.0.0.1";
  port: number;
  /** The superuser (trusted on loopback). */
  user: "postgres";
  binDir: string;
  dataDir: string;
  /** The directory of the server's unix socket. */
  socketDir: string;
  /** The server's log (its stderr: `pg_ctl -l`), where it says why it ended a session. */
  serverLog: string;
  /**
   * The self-signed certificate the server offers TLS with (CN localhost, SAN 127.0.0.1), to use as a
   * client's sslrootcert; null when openssl is not installed (the server then offers no TLS).
   */
  tlsCert: string | null;
  /** A URL for the superuser on `database` (no password: loopback is trusted). */
  url(database: string): string;
}

/** The newest server bin directory: LI_TEST_PG_BIN, else Debian's /usr/lib/postgresql/N/bin, else PATH. */
export function postgresBinDir(): string | null {
  const explicit = process.env.LI_TEST_PG_BIN;
  if (explicit) return existsSync(join(explicit, "initdb")) ? explicit : null;
  const root = "/usr/lib/postgresql";
  if (existsSync(root)) {
    const versions = readdirSync(root)
      .filter((v) => /^[0-9]+$/.test(v) && existsSync(join(root, v, "bin", "initdb")))
      .sort((a, b) => Number(b) - Number(a));
    if (versions[0]) return join(root, versions[0], "bin");
  }
  const onPath = Bun.which("initdb");
  return onPath ? dirname(onPath) : null;
}

const isRoot = () => process.getuid?.() === 0;
const CLUSTER_PREFIX = "li-pg-";

/** The argv that runs a server program as the postgres user when we are root (initdb, pg_ctl and pgbouncer refuse root). */
export function asServerUser(argv: readonly string[]): string[] {
  return isRoot() ? ["runuser", "-u", "postgres", "--", ...argv] : [...argv];
}

/** Runs a server program to its end (as the postgres user when we are root). */
function runServerTool(argv: string[], what: string): string {
  const full = asServerUser(argv);
  const env: Record<string, string> = { PATH: process.env.PATH ?? "/usr/bin:/bin", LC_ALL: "C" };
  const result = Bun.spawnSync(full, { env, stdout: "pipe", stderr: "pipe" });
  const output = result.stdout.toString() + result.stderr.toString();
  if (result.exitCode !== 0) throw new Error(`${what} failed (exit ${result.exitCode}): ${output.trim().slice(-2000)}`);
  return output;
}

/** Gives `path` to the postgres user when we are root (the server refuses a data directory it does not own). */
export function chownToServerUser(path: string): void {
  if (isRoot()) chownToPostgres(path);
}

function chownToPostgres(path: string): void {
  const id = (flag: string) => Number(Bun.spawnSync(["id", flag, "postgres"]).stdout.toString().trim());
  chownSync(path, id("-u"), id("-g"));
}

/** A loopback port nobody listens on right now (the server may still lose a race for it: start retries). */
export function freePort(): number {
  const server = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = server.port;
  server.stop(true);
  return port;
}

/** The pid of the live postmaster of `dataDir` (its postmaster.pid names it, and its command line names the directory), else null. */
function postmasterOf(dataDir: string): number | null {
  try {
    const pid = Number(readFileSync(join(dataDir, "postmaster.pid"), "utf8").split("\n")[0]);
    if (!Number.isSafeInteger(pid) || pid <= 0) return null;
    return commandLine(pid)?.includes(dataDir) ? pid : null;
  } catch {
    return null;
  }
}

/** Clusters left by test processes that died without stopping theirs (kill -9): stopped and removed. */
function reapAbandonedClusters(binDir: string): void {
  for (const entry of readdirSync(tmpdir())) {
    const owner = Number(/^li-pg-([0-9]+)-/.exec(entry)?.[1]);
    if (!owner || owner === process.pid || isAlive(owner)) continue;
    const dir = join(tmpdir(), entry);
    try {
      // pg_ctl signals whatever process now has the pid its postmaster.pid names: only a postmaster of
      // this very data directory is stopped, never a process that reused the pid (another cluster's).
      if (postmasterOf(join(dir, "data")) !== null) runServerTool([join(binDir, "pg_ctl"), "-D", join(dir, "data"), "-m", "immediate", "stop"], "pg_ctl stop");
    } catch {
      // Already stopped, or half initialised: removing the directory is all that is left to do.
    }
    // Perhaps still being removed by the background rm its run started: never a reason to fail this start.
    removeInBackground([dir]);
  }
}

/** A self-signed server certificate and key in `dir` (the key owner-only, as the server demands), or null without openssl. */
function makeServerCertificate(dir: string): string | null {
  const openssl = Bun.which("openssl");
  if (!openssl) return null;
  const cert = join(dir, "server.crt");
  const key = join(dir, "server.key");
  const made = Bun.spawnSync(
    [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost", "-keyout", key, "-out", cert],
    { stdout: "pipe", stderr: "pipe" },
  );
  if (made.exitCode !== 0) throw new Error(`openssl could not make the test server's certificate: ${made.stderr.toString().trim()}`);
  chmodSync(key, 0o600);
  if (isRoot()) {
    chownToPostgres(cert);
    chownToPostgres(key);
  }
  return cert;
}

function startCluster(binDir: string): PgCluster {
  reapAbandonedClusters(binDir);
  const dir = mkdtempSync(join(tmpdir(), `${CLUSTER_PREFIX}${process.pid}-`));
  const dataDir = join(dir, "data");
  if (isRoot()) chownToPostgres(dir);
  runServerTool([join(binDir, "initdb"), "-D", dataDir, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync", "--no-instructions"], "initdb");
  // The first matching line decides: members of PASSWORD_ROLE_GROUP must give a password (the credential tests).
  writeFileSync(
    join(dataDir, "pg_hba.conf"),
    [
      "local all all trust",
      `host all +${PASSWORD_ROLE_GROUP} 127.0.0.1/32 scram-sha-256`,
      "host all all 127.0.0.1/32 trust",
      "",
    ].join("\n"),
  );
  if (isRoot()) chownToPostgres(join(dataDir, "pg_hba.conf"));
  const tlsCert = makeServerCertificate(dir);
  const tls = tlsCert ? ` -c ssl=on -c ssl_cert_file=${tlsCert} -c ssl_key_file=${join(dir, "server.key")}` : "";
  // pg_stat_statements (contrib, shipped with the server) counts each role's statements: the fleet tests
  // (test/ledger/postgres/fleet-wakeups.test.ts) count what each watcher ran.
  // LI_TEST_PG_MAX_CONNECTIONS: a benchmark with more watchers than 300 connections hold (bench/fleet.ts).
  const statements = existsSync(join(binDir, "..", "lib", "pg_stat_statements.so")) ? " -c shared_preload_libraries=pg_stat_statements" : "";
  const settings = `-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=${process.env.LI_TEST_PG_MAX_CONNECTIONS ?? 300}${statements}${tls}`;
  let lastError: unknown;
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = freePort();
    try {
      runServerTool(
        [join(binDir, "pg_ctl"), "-D", dataDir, "-l", join(dir, "server.log"), "-o", `-c listen_addresses=127.0.0.1 -p ${port} -k ${dir} ${settings}`, "-w", "-t", "60", "start"],
        "pg_ctl start",
      );
      stopCluster = () => {
        try {
          runServerTool([join(binDir, "pg_ctl"), "-D", dataDir, "-m", "immediate", "stop"], "pg_ctl stop");
        } finally {
          // The suite's cluster holds some 60,000 files: removed here, under load, it outlasted the hook's timeout.
          removeInBackground([dir]);
        }
      };
      // The same server, same port and settings: what a restart test stops and starts again.
      stopServer = () => runServerTool([join(binDir, "pg_ctl"), "-D", dataDir, "-m", "fast", "-w", "stop"], "pg_ctl stop");
      startServer = () =>
        runServerTool(
          [join(binDir, "pg_ctl"), "-D", dataDir, "-l", join(dir, "server.log"), "-o", `-c listen_addresses=127.0.0.1 -p ${port} -k ${dir} ${settings}`, "-w", "-t", "60", "start"],
          "pg_ctl start",
        );
      return { host: "127.0.0.1", port, user: "postgres", binDir, dataDir, socketDir: dir, serverLog: join(dir, "server.log"), tlsCert, url: (db) => `postgres://postgres@127.0.0.1:${port}/${db}?sslmode=disable` };
    } catch (error) {
      lastError = error; // most likely the port was taken in between: try another
    }
  }
  rmSync(dir, { recursive: true, force: true });
  throw lastError;
}

let cluster: PgCluster | undefined;
let stopCluster: (() => void) | undefined;
let stopServer: (() => void) | undefined;
let startServer: (() => void) | undefined;

/**
 * Stops this process's server (`pg_ctl stop -m fast`: every connection is closed, as in a real restart),
 * runs `whileDown`, then starts it again on the same port and data directory. Resolves once it accepts
 * connections again (pg_ctl -w).
 */
export async function restartPostgresServer(whileDown: () => void | Promise<void> = () => {}): Promise<void> {
  postgresCluster();
  stopServer!();
  try {
    await whileDown();
  } finally {
    startServer!();
  }
}

/**
 * Stops this process's cluster, if one was started. bun test runs no process exit handler, so the
 * preload test/helpers/postgres-teardown.ts calls this from a global afterAll.
 */
export function stopPostgresCluster(): void {
  const stop = stopCluster;
  cluster = undefined;
  stopCluster = undefined;
  stopServer = undefined;
  startServer = undefined;
  stop?.();
}

/** This test process's cluster, started on first use. */
export function postgresCluster(): PgCluster {
  const binDir = postgresBinDir();
  if (!binDir) throw new Error("PostgreSQL is not installed (no initdb found)");
  cluster ??= startCluster(binDir);
  return cluster;
}

/** Runs `fn` on a superuser connection to `database` (default: the maintenance database). */
export async function asSuperuser<T>(fn: (sql: SQL) => Promise<T>, database = "postgres"): Promise<T> {
  const sql = new SQL({ url: postgresCluster().url(database), max: 1 });
  try {
    return await fn(sql);
  } finally {
    await sql.close();
  }
}

export interface PgDatabase {
  /** Filled in before the file's first test. */
  name: string;
  /** The superuser's URL of this database. */
  url: string;
}

/** A fresh database for this test file: created before its first test, dropped after its last. */
export function usePostgresDatabase(): PgDatabase {
  const db: PgDatabase = { name: "", url: "" };
  beforeAll(async () => {
    db.name = `t_${crypto.randomUUID().replace(/-/g, "").slice(0, 16)}`;
    await asSuperuser((sql) => sql.unsafe(`CREATE DATABASE "${db.name}"`));
    db.url = postgresCluster().url(db.name);
  });
  afterAll(async () => {
    if (db.name) await asSuperuser((sql) => sql.unsafe(`DROP DATABASE IF EXISTS "${db.name}" WITH (FORCE)`));
  });
  return db;
}

/** Why pg_stat_statements cannot count statements on the test cluster, or null when it can. */
export const statementStatistics: Prerequisite = () => {
  const bin = postgresBinDir();
  return bin && existsSync(join(bin, "..", "lib", "pg_stat_statements.so")) ? null : "pg_stat_statements is not installed beside the server (PostgreSQL's contrib)";
};

/** CI=true (any CI), or LI_REQUIRE_POSTGRES=1 (.ci/run, which installs PostgreSQL): a skip would look green. */
const mustRun = (): boolean => process.env.LI_REQUIRE_POSTGRES === "1" || (!!process.env.CI && process.env.CI !== "false" && process.env.CI !== "0");

/** Another program a PostgreSQL suite needs beside the server (PgBouncer): why it cannot run, or null when it can. */
export type Prerequisite = () => string | null;

const postgresInstalled: Prerequisite = () =>
  postgresBinDir() ? null : "PostgreSQL is not installed (no initdb under /usr/lib/postgresql/*/bin, LI_TEST_PG_BIN or PATH)";

/**
 * `describe` for a PostgreSQL suite. Without PostgreSQL (or a program in `needs`) it is skipped with a
 * loud line on stderr; under CI (CI=true, or LI_REQUIRE_POSTGRES=1 from .ci/run) it fails instead, since
 * CI installs them.
 */
export function describePostgres(name: string, body: () => void, needs: readonly Prerequisite[] = []): void {
  // These suites start databases of their own and never read the backend switch: they run in the SQLite
  // half (npm test). The PostgreSQL half (LI_TEST_BACKEND=postgres) skips them, so CI runs them once;
  // LI_TEST_PG_SPECIFIC=1 runs them there too (a PostgreSQL suite worked on alone).
  if (process.env.LI_TEST_BACKEND === "postgres" && process.env.LI_TEST_PG_SPECIFIC !== "1") {
    console.error(`(PostgreSQL-specific suite "${name}" skipped in the PostgreSQL half: it runs in npm test; LI_TEST_PG_SPECIFIC=1 runs it here)`);
    describe.skip(name, body);
    return;
  }
  const why = [postgresInstalled, ...needs].map((missing) => missing()).find((reason) => reason !== null);
  if (why === undefined) {
    describe(name, body);
    return;
  }
  if (mustRun()) {
    describe(name, () => {
      test("the programs the PostgreSQL tests need are installed (CI=true or LI_REQUIRE_POSTGRES=1: .ci/run installs them)", () => {
        throw new Error(`${why}: the PostgreSQL tests cannot run under CI`);
      });
    });
    return;
  }
  console.error(`\n!!! NOT RUN: PostgreSQL tests "${name}": ${why}. See README "PostgreSQL tests".\n`);
  describe.skip(name, body);
}

/**
 * A login role that must give `password` (pg_hba asks members of PASSWORD_ROLE_GROUP for one), with
 * every privilege on `database`. Returns its name.
 */
export async function createPasswordRole(password: string, database: string): Promise<string> {
  const role = `pw_${crypto.randomUUID().replace(/-/g, "").slice(0, 12)}`;
  await asSuperuser(async (sql) => {
    await sql.unsafe(`DO $$ BEGIN CREATE ROLE ${PASSWORD_ROLE_GROUP} NOLOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$`);
    await sql.unsafe(`CREATE ROLE ${role} LOGIN PASSWORD '${password.replace(/'/g, "''")}' IN ROLE ${PASSWORD_ROLE_GROUP}`);
    await sql.unsafe(`GRANT ALL ON DATABASE "${database}" TO ${role}`);
  });
  await asSuperuser((sql) => sql.unsafe(`GRANT ALL ON SCHEMA public TO ${role}`), database);
  return role;
}
