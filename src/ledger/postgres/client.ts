// Opens a session pool on a PostgreSQL ledger through Bun's built-in SQL client (SPEC §14), with
// explicit options only (options.ts resolved them as libpq does), li's schema on the search_path and
// the session timeouts that keep a stuck server from hanging a command.

import { SQL } from "bun";
import { LedgerUnavailableError, UsageError } from "../../util/errors.ts";
import { asPgLedgerError } from "./errors.ts";
import { targetName, type PgTarget } from "./options.ts";
import { scrubPassword } from "./redact.ts";

/** Session limits, sent as startup parameters so every pooled connection has them from its first query. */
export interface SessionLimits {
  statementTimeoutMs: number;
  lockTimeoutMs: number;
}

/** li's statements are short; a statement or lock wait beyond these is a sick server, not a slow one. */
export const DEFAULT_LIMITS: SessionLimits = { statementTimeoutMs: 60_000, lockTimeoutMs: 15_000 };

/** `LI_PG_STATEMENT_TIMEOUT_MS`: the statement timeout li sets (tests of a dead connection shorten it; so may a fleet). */
export const STATEMENT_TIMEOUT_ENV = "LI_PG_STATEMENT_TIMEOUT_MS";

/** The session limits: the defaults, or a statement timeout from the environment (the lock timeout never longer). */
export function sessionLimits(env: Record<string, string | undefined> = process.env): SessionLimits {
  const value = env[STATEMENT_TIMEOUT_ENV];
  if (value === undefined || value.trim() === "") return DEFAULT_LIMITS;
  const ms = Number(value);
  if (!/^\s*\d+\s*$/.test(value) || ms < 100) throw new UsageError(`${STATEMENT_TIMEOUT_ENV}: expected whole milliseconds (at least 100), got '${value}'`);
  return { statementTimeoutMs: ms, lockTimeoutMs: Math.min(DEFAULT_LIMITS.lockTimeoutMs, ms) };
}

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
}

/** The options handed to Bun: every field set, so no environment variable Bun reads can change them. */
export function clientOptions(target: PgTarget, shape: PoolShape = {}): Bun.SQL.PostgresOrMySQLOptions {
  const limits = shape.limits ?? DEFAULT_LIMITS;
  const connection: Record<string, string> = {
    search_path: quoteIdent(target.schema),
    statement_timeout: String(Math.floor(limits.statementTimeoutMs)),
    lock_timeout: String(Math.floor(limits.lockTimeoutMs)),
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
): Promise<{ client: PgClient; first: T }> {
  const name = targetName(target);
  const sql = new SQL(clientOptions(target, options));
  let answer: T;
  try {
    answer = await first(sql);
  } catch (error) {
    await sql.close({ timeout: 0 }).catch(() => {});
    // Anything that fails the first round trip is about reaching the ledger, classified or not.
    const said = scrubPassword(String((error as Error)?.message ?? error), target.password);
    throw asPgLedgerError(error, name, target.password) ?? new LedgerUnavailableError(name, `cannot connect: ${said}`);
  }
  return { client: { sql, target, name, close: () => sql.close({ timeout: 5 }) }, first: answer };
}
