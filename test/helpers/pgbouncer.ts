// A throwaway PgBouncer in front of this test process's PostgreSQL cluster (test/helpers/postgres.ts), for
// the tests of li behind a connection pooler (docs/postgres.md "Behind a connection pooler"): session
// pooling on a free loopback port, every database of the cluster passed through, trusted logins for the
// users it is told about. It runs as the postgres user when we are root (pgbouncer refuses root), is
// stopped after the file's last test (usePgBouncer), and one left by a test process that died is stopped
// by the next start. LI_TEST_PGBOUNCER names the program when it is not /usr/sbin/pgbouncer or on PATH.

import { afterAll, beforeAll } from "bun:test";
import type { Subprocess } from "bun";
import { existsSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { asServerUser, chownToServerUser, freePort, postgresCluster, type Prerequisite } from "./postgres.ts";
import { removeInBackground } from "./temp-dirs.ts";
import { commandLine, isAlive, NeverHappens, pidFromFile, signalPid, untilGone, until } from "./until.ts";

export interface PgBouncerOptions {
  /** Startup parameters PgBouncer drops instead of refusing the connection (its `ignore_startup_parameters`); none by default, as PgBouncer ships. */
  ignoreStartupParameters?: readonly string[];
  /**
   * Users besides postgres, each with its password: the one it logs in to the server with and, when
   * `settings` sets an auth_type other than the default trust, the one it asks the client for.
   */
  users?: Readonly<Record<string, string>>;
  /** The server port it forwards to (default: the cluster's; a closed port plays a server that is down). */
  serverPort?: number;
  /** More `[pgbouncer]` settings (query_wait_timeout, server_login_retry…), over the ones above. */
  settings?: Readonly<Record<string, string>>;
}

export interface PgBouncer {
  host: "127.0.0.1";
  port: number;
  /** A URL of `database` through the pooler, as the superuser unless `user` (and its `password`) are given. */
  url(database: string, user?: string, password?: string): string;
  /** The pooler's own log. */
  log(): string;
  stop(): Promise<void>;
}

/** LI_TEST_PGBOUNCER, else Debian's /usr/sbin/pgbouncer, else pgbouncer on PATH; null when none exists. */
export function pgbouncerBinary(): string | null {
  const explicit = process.env.LI_TEST_PGBOUNCER;
  if (explicit) return statSync(explicit, { throwIfNoEntry: false })?.isFile() ? explicit : null;
  if (existsSync("/usr/sbin/pgbouncer")) return "/usr/sbin/pgbouncer";
  return Bun.which("pgbouncer");
}

/** For describePostgres: a PgBouncer suite is NOT RUN (loudly; a failure under CI) without the program. */
export const pgbouncerInstalled: Prerequisite = () =>
  pgbouncerBinary() ? null : "PgBouncer is not installed (no /usr/sbin/pgbouncer, LI_TEST_PGBOUNCER or pgbouncer on PATH; Debian: apt-get install pgbouncer)";

const PREFIX = "li-pgb-";

/** PgBouncer's auth_file: one `"user" "password"` line each, a double quote doubled. */
function authFile(users: Readonly<Record<string, string>>): string {
  const quote = (text: string) => `"${text.replace(/"/g, '""')}"`;
  return Object.entries(users).map(([user, password]) => `${quote(user)} ${quote(password)}\n`).join("");
}

function configuration(dir: string, port: number, serverPort: number, logFile: string, options: PgBouncerOptions): string {
  return [
    "[databases]",
    // Any database name the client asks for, on the cluster, under the same name.
    `* = host=127.0.0.1 port=${serverPort}`,
    "[pgbouncer]",
    "listen_addr = 127.0.0.1",
    `listen_port = ${port}`,
    "unix_socket_dir =",
    "auth_type = trust",
    `auth_file = ${join(dir, "users.txt")}`,
    "pool_mode = session",
    "max_client_conn = 200",
    "default_pool_size = 50",
    `ignore_startup_parameters = ${(options.ignoreStartupParameters ?? []).join(", ")}`,
    `logfile = ${logFile}`,
    `pidfile = ${join(dir, "pgbouncer.pid")}`,
    ...Object.entries(options.settings ?? {}).map(([key, value]) => `${key} = ${value}`),
    "",
  ].join("\n");
}

/** Poolers left by test processes that died without stopping theirs (kill -9): stopped and removed. */
function reapAbandoned(): void {
  for (const entry of readdirSync(tmpdir())) {
    const owner = Number(new RegExp(`^${PREFIX}([0-9]+)-`).exec(entry)?.[1]);
    if (!owner || owner === process.pid || isAlive(owner)) continue;
    const dir = join(tmpdir(), entry);
    try {
      const pid = Number(readFileSync(join(dir, "pgbouncer.pid"), "utf8").trim());
      // Only the pgbouncer that runs this directory's configuration: a recycled pid is someone else.
      if (pid > 0 && commandLine(pid)?.some((arg) => arg.includes(dir))) process.kill(pid, "SIGTERM");
    } catch {
      // No pid file, or that process is gone: removing the directory is all that is left to do.
    }
    removeInBackground([dir]);
  }
}

/**
 * Waits until the pooler says it is up (it logs "process up" once it listens and enters its event loop;
 * a TCP probe could be answered by whoever won the race for the port), or it ended having lost that race.
 */
function started(proc: Subprocess, port: number, logFile: string): Promise<"up" | "port taken"> {
  return until(`PgBouncer on 127.0.0.1:${port} to start`, () => {
    const said = existsSync(logFile) ? readFileSync(logFile, "utf8") : "";
    if (proc.exitCode !== null) {
      if (/Address already in use/i.test(said)) return "port taken" as const;
      throw new NeverHappens(`pgbouncer exited (${proc.exitCode}): ${said.trim().slice(-1000)}`);
    }
    return said.includes(`listening on 127.0.0.1:${port}`) && said.includes("process up:") ? ("up" as const) : null;
  });
}

/** Starts a PgBouncer in front of this process's cluster (started on first use). */
export async function startPgBouncer(options: PgBouncerOptions = {}): Promise<PgBouncer> {
  const binary = pgbouncerBinary();
  if (!binary) throw new Error(pgbouncerInstalled()!);
  const cluster = postgresCluster();
  reapAbandoned();
  const dir = mkdtempSync(join(tmpdir(), `${PREFIX}${process.pid}-`));
  chownToServerUser(dir);
  writeFileSync(join(dir, "users.txt"), authFile({ postgres: "", ...options.users }));
  let logFile = "";
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = freePort();
    // A log of its own per attempt: an earlier attempt's "Address already in use" must not be read as this one's.
    logFile = join(dir, `pgbouncer-${attempt}.log`);
    writeFileSync(join(dir, "pgbouncer.ini"), configuration(dir, port, options.serverPort ?? cluster.port, logFile, options));
    // -q: nothing on stderr (nobody reads it); everything goes to the log file. process.env carries the
    // run's owner token, so validPid knows the pooler as ours even under runuser.
    const proc = Bun.spawn(asServerUser([binary, "-q", join(dir, "pgbouncer.ini")]), { env: process.env, stdin: "ignore", stdout: "ignore", stderr: "ignore" });
    let pid: number;
    try {
      if ((await started(proc, port, logFile)) === "port taken") continue;
      // Under runuser the spawned process is runuser: the pooler itself is the pid in its pid file.
      pid = await pidFromFile(join(dir, "pgbouncer.pid"), "PgBouncer's pid");
    } catch (error) {
      // Never left running unseen: runuser passes the signal on to the pooler.
      proc.kill("SIGTERM");
      await proc.exited;
      removeInBackground([dir]);
      throw error;
    }
    const thisLog = logFile;
    let stopped = false;
    return {
      host: "127.0.0.1",
      port,
      url: (database, user = "postgres", password) =>
        `postgres://${encodeURIComponent(user)}${password === undefined ? "" : `:${encodeURIComponent(password)}`}@127.0.0.1:${port}/${database}?sslmode=disable`,
      log: () => (existsSync(thisLog) ? readFileSync(thisLog, "utf8") : ""),
      async stop() {
        if (stopped) return;
        stopped = true;
        // SIGTERM: PgBouncer's immediate shutdown (its clients' connections are closed).
        if (isAlive(pid)) signalPid(pid, "SIGTERM", { what: "PgBouncer" });
        await untilGone(pid, "PgBouncer to stop");
        await proc.exited;
        removeInBackground([dir]);
      },
    };
  }
  removeInBackground([dir]);
  throw new Error(`PgBouncer could not get a free port in 5 attempts: ${readFileSync(logFile, "utf8").trim().slice(-1000)}`);
}

export interface UsedPgBouncer {
  /** Filled in before the file's first test. */
  bouncer: PgBouncer;
}

/** A PgBouncer for this test file: started before its first test, stopped after its last. */
export function usePgBouncer(options: PgBouncerOptions | (() => PgBouncerOptions | Promise<PgBouncerOptions>) = {}): UsedPgBouncer {
  const used = {} as UsedPgBouncer;
  beforeAll(async () => {
    used.bouncer = await startPgBouncer(typeof options === "function" ? await options() : options);
  });
  afterAll(async () => {
    await used.bouncer?.stop();
  });
  return used;
}
