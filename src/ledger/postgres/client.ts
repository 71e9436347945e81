// Opens a session pool on a PostgreSQL ledger through Bun's built-in SQL client (SPEC §14), with
// explicit options only (options.ts resolved them as libpq does), li's schema on the search_path and
// the session timeouts that keep a stuck server from hanging a command.

import { SQL } from "bun";
import { LedgerUnavailableError, UsageError } from "../../util/errors.ts";
import { asPgLedgerError } from "./errors.ts";
import { targetName, type PgTarget } from "./options.ts";
import { scrubPassword } from "./redact.ts";
import type { SessionStartupParameter } from "./startup-parameters.ts";

/** Session limits, sent as startup parameters so every pooled connection has them from its first query. */
export interface SessionLimits {
  statementTimeoutMs: number;
  lockTimeoutMs: number;
  /**
   * `idle_in_transaction_session_timeout`: the server ends a session that sits idle inside a transaction
   * this long, and with it the transaction and its row locks (0: never). See idleInTransactionMs.
   */
  idleInTransactionMs: number;
}

/**
 * Never shorter than this: the only idle time inside one of li's transactions is li's own JavaScript
 * between two statements, and a loaded build machine can stall a process for a second or more (GC, CPU
 * starvation). A transaction ended for that costs a failed call and a retry; a ghost living a few
 * seconds longer costs the other writers a wait.
 */
export const IDLE_IN_TRANSACTION_FLOOR_MS = 5_000;

/**
 * How long the server lets one of li's sessions sit idle inside a transaction: the lock timeout (never
 * below the floor). Every li transaction (PgBackend.transaction, the migrator) is a few statements issued
 * back to back; nothing inside one waits on a person, a process or the network other than the statements
 * themselves, so a session idle that long inside one is a ghost: its client was cut off (a partition, a
 * host that died without closing its sockets) and the server would otherwise keep its row locks until
 * TCP gives up, hours later. Equal to the lock timeout, a ghost is ended while a writer that began waiting
 * on its locks once it went quiet is still waiting: the ghost costs that writer a delay, not a failure.
 */
export function idleInTransactionMs(lockTimeoutMs: number): number {
  return Math.max(lockTimeoutMs, IDLE_IN_TRANSACTION_FLOOR_MS);
}

/** li's statements are short; a statement or lock wait beyond these is a sick server, not a slow one. */
export const DEFAULT_LIMITS: SessionLimits = { statementTimeoutMs: 60_000, lockTimeoutMs: 15_000, idleInTransactionMs: idleInTransactionMs(15_000) };

/** `LI_PG_STATEMENT_TIMEOUT_MS`: the statement timeout li sets (tests of a dead connection shorten it; so may a fleet). */
export const STATEMENT_TIMEOUT_ENV = "LI_PG_STATEMENT_TIMEOUT_MS";

/** The session limits: the defaults, or a statement timeout from the environment (the lock timeout never longer; the idle limit follows the lock timeout). */
export function sessionLimits(env: Record<string, string | undefined> = process.env): SessionLimits {
  const value = env[STATEMENT_TIMEOUT_ENV];
  if (value === undefined || value.trim() === "") return DEFAULT_LIMITS;
  const ms = Number(value);
  if (!/^\s*\d+\s*$/.test(value) || ms < 100) throw new UsageError(`${STATEMENT_TIMEOUT_ENV}: expected whole milliseconds (at least 100), got '${value}'`);
  const lockTimeoutMs = Math.min(DEFAULT_LIMITS.lockTimeoutMs, ms);
  return { statementTimeoutMs: ms, lockTimeoutMs, idleInTransactionMs: idleInTransactionMs(lockTimeoutMs) };
}

/**
 * Server-side TCP keepalives for li's sessions (seconds; the user timeout in ms), so the server notices a
 * vanished peer outside a transaction too: the idle pool connections, the LISTEN session and the watcher's
 * lock session of a host that died or was cut off. Without them the server keeps those for hours (default
 * keepalives) — a rebooted host's `li watch` then finds its lock held by a session no process of that host
 * owns any more, and cannot start. With them a peer unheard of for about two minutes is dropped: a probe
 * after 60 s of silence, then every 10 s, six unanswered ends it; tcp_user_timeout bounds the same two
 * minutes when the server has data in flight to the peer (a NOTIFY to a dead listener), where keepalive
 * probes do not run. A live idle session costs one probe a minute; a partition shorter than two minutes
 * cuts nothing. Ignored on a Unix socket. Not derived from the session limits: they are about the
 * network, not about li's statements. (`idle_session_timeout` stays off: a watcher's lock session and a
 * LISTEN are idle for hours by design.)
 */
export const SERVER_KEEPALIVES: Readonly<Record<Extract<SessionStartupParameter, `tcp_${string}`>, string>> = Object.freeze({
  tcp_keepalives_idle: "60",
  tcp_keepalives_interval: "10",
  tcp_keepalives_count: "6",
  tcp_user_timeout: "120000",
});

/**
 * The longest li waits for one call (a query, or a whole transaction, connecting included) before it
 * gives up on the connection: the server's statement timeout answers a slow statement first, so only
 * a server or link that stopped answering without closing reaches this (§17 item 1).
 */
export function callDeadlineMs(limits: SessionLimits, connectTimeoutSeconds: number): number {
  return limits.statementTimeoutMs + Math.min(5000, limits.statementTimeoutMs) + connectTimeoutSeconds * 1000;
}

export interface PgClient {
  sql: SQL;
  target: PgTarget;
  /** `postgres://HOST:PORT/DATABASE`, the only way li names this ledger. */
  name: string;
  close(): Promise<void>;
}

/** `"li"`: an identifier quoted for SQL (schema names are validated by options.ts; quoting is the belt). */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

function tlsOption(target: PgTarget): Bun.SQL.PostgresOrMySQLOptions["tls"] {
  const files = target.sslRootCert || target.sslCert || target.sslKey;
  if (!files || target.sslmode === "disable") return target.sslmode;
  // A root certificate means verifying the server: Bun then checks the host name too (verify-full).
  return {
    ...(target.sslRootCert ? { ca: Bun.file(target.sslRootCert) } : {}),
    ...(target.sslCert ? { cert: Bun.file(target.sslCert) } : {}),
    ...(target.sslKey ? { key: Bun.file(target.sslKey) } : {}),
  };
}

/** How a pool is shaped: its size and whether it names (prepares) its statements. */
export interface PoolShape {
  limits?: SessionLimits;
  /** Connections in the pool: Bun opens them all on the first query. */
  max?: number;
  /**
   * Named prepared statements (the default): a statement's first use costs a round trip of its own
   * (Parse, then Bind), its later uses none. A one-shot read command runs each statement once, so it
   * sends them unnamed: one round trip each.
   */
  prepare?: boolean;
  /** Called when one of the client's connections closes, after it is counted (closedConnections). */
  onclose?: (error: unknown) => void;
}

/** Connections of this process that closed (the server ended them, the link dropped, or li closed a pool). */
let closedConnectionCount = 0;

/**
 * How many connections of this process have closed so far. A session-level advisory lock holds while its
 * connection lives: as long as this count has not moved, no lock of this process was dropped with its
 * connection (watch-lock.ts asks the server only then, §14 "Many hosts").
 */
export function closedConnections(): number {
  return closedConnectionCount;
}

/** The options handed to Bun: every field set, so no environment variable Bun reads can change them. */
export function clientOptions(target: PgTarget, shape: PoolShape = {}): Bun.SQL.PostgresOrMySQLOptions {
  const limits = shape.limits ?? DEFAULT_LIMITS;
  // Typed by the one list of li's startup parameters, so a setting added here is named there too.
  const connection: Record<SessionStartupParameter | "application_name", string> & { options?: string } = {
    search_path: quoteIdent(target.schema),
    statement_timeout: String(Math.floor(limits.statementTimeoutMs)),
    lock_timeout: String(Math.floor(limits.lockTimeoutMs)),
    idle_in_transaction_session_timeout: String(Math.floor(limits.idleInTransactionMs)),
    ...SERVER_KEEPALIVES,
    application_name: target.applicationName,
    // li's statements are index probes that finish in a millisecond; a planner's cost estimate above
    // jit_above_cost (a watermark it cannot see) would spend hundreds of ms compiling one (measured: 300 ms).
    jit: "off",
  };
  if (target.serverOptions) connection.options = target.serverOptions;
  const socket = target.host.startsWith("/");
  return {
    adapter: "postgres",
    ...(socket ? { path: target.host, hostname: "localhost" } : { hostname: target.host }),
    port: target.port,
    username: target.user,
    password: target.password ?? "",
    database: target.database,
    tls: tlsOption(target),
    connectionTimeout: target.connectTimeoutSeconds,
    connection,
    max: shape.max ?? 4,
    prepare: shape.prepare ?? true,
    idleTimeout: 0,
    bigint: false,
    onclose: (error: unknown) => {
      closedConnectionCount++;
      shape.onclose?.(error);
    },
  };
}

/**
 * Connects (one round trip, so a wrong host or password fails here, named) and returns the pool. A
 * failure is a LedgerUnavailableError (78) naming host, port and database, its reason scrubbed of the password.
 */
export async function connectPg(target: PgTarget, options: PoolShape = {}): Promise<PgClient> {
  return (await connectPgWith(target, (sql) => sql`SELECT 1`, options)).client;
}

/**
 * connectPg whose first round trip is `first` (the ledger's open reads its version row and the server's
 * clock in it, so opening an up-to-date ledger costs one round trip). `first` must itself catch the
 * errors it expects (a missing table); any other failure is reported as connectPg reports it.
 */
export async function connectPgWith<T>(
  target: PgTarget,
  first: (sql: SQL) => Promise<T>,
  options: PoolShape = {},
  signal?: AbortSignal,
): Promise<{ client: PgClient; first: T }> {
  const name = targetName(target);
  const sql = new SQL(clientOptions(target, options));
  // Aborted (its ledger closed) before the first answer: the attempt is given up at once. A connection
  // to a server that accepts and never answers would otherwise keep the process until connect_timeout,
  // past a command's own deadline (li wait --timeout, §17).
  const giveUp = () => void sql.close({ timeout: 0 }).catch(() => {});
  signal?.addEventListener("abort", giveUp, { once: true });
  let answer: T;
  try {
    if (signal?.aborted) giveUp();
    answer = await first(sql);
  } catch (error) {
    await sql.close({ timeout: 0 }).catch(() => {});
    // Anything that fails the first round trip is about reaching the ledger, classified or not.
    const said = scrubPassword(String((error as Error)?.message ?? error), target.password);
    throw asPgLedgerError(error, name, target.password) ?? new LedgerUnavailableError(name, `cannot connect: ${said}`);
  } finally {
    signal?.removeEventListener("abort", giveUp);
  }
  return { client: { sql, target, name, close: () => sql.close({ timeout: 5 }) }, first: answer };
}
