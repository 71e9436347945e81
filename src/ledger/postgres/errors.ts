// The one classifier of PostgreSQL failures, as src/ledger/sqlite/errors.ts is for SQLite: which errors
// mean "the ledger cannot be reached or used" (exit 78, one line naming host, port and database) and
// which are li's own bugs. Every reason passes through the password scrubber (redact.ts).

import { LedgerUnavailableError } from "../../util/errors.ts";
import { scrubPassword } from "./redact.ts";
import { SESSION_STARTUP_PARAMETERS } from "./startup-parameters.ts";

export interface PgFault {
  reason: string;
  /** §17's "unreachable": the server or the network, worth retrying. Otherwise a refusal. */
  unreachable: boolean;
}

/** Bun's own codes, for failures before or outside a server answer. */
const CLIENT_FAULTS: Readonly<Record<string, { reason: string; unreachable: boolean }>> = {
  ERR_POSTGRES_CONNECTION_REFUSED: { reason: "connection refused (is the server running?)", unreachable: true },
  ERR_POSTGRES_CONNECTION_FAILED: { reason: "cannot connect", unreachable: true },
  ERR_POSTGRES_CONNECTION_TIMEOUT: { reason: "connect timed out", unreachable: true },
  ERR_POSTGRES_CONNECTION_CLOSED: { reason: "connection closed", unreachable: true },
  ERR_POSTGRES_IDLE_TIMEOUT: { reason: "connection closed", unreachable: true },
  ERR_POSTGRES_LIFETIME_TIMEOUT: { reason: "connection closed", unreachable: true },
  ERR_POSTGRES_TLS_NOT_AVAILABLE: { reason: "the server does not offer TLS (sslmode asks for it)", unreachable: false },
  ERR_POSTGRES_TLS_UPGRADE_FAILED: { reason: "TLS failed", unreachable: false },
};

const TLS_VERIFY = /CERT|SELF_SIGNED|HOSTNAME|ALTNAME|ISSUER/;

/** "search_path, statement_timeout, …, tcp_user_timeout and jit". */
const SENT_AT_STARTUP = `${SESSION_STARTUP_PARAMETERS.slice(0, -1).join(", ")} and ${SESSION_STARTUP_PARAMETERS.at(-1)}`;

/**
 * SQLSTATE classes (the first two characters) and codes that are about the ledger, not li's SQL; the
 * first match wins. `message`, when given, narrows an entry to the server texts it matches.
 */
const SERVER_FAULTS: readonly { sqlstate: string; message?: RegExp; reason: string; unreachable: boolean }[] = [
  { sqlstate: "28", reason: "authentication failed", unreachable: false },
  { sqlstate: "3D000", reason: "no such database", unreachable: false },
  { sqlstate: "42501", reason: "permission denied", unreachable: false },
  // A pooler (PgBouncer) refusing li's session settings: its configuration, which no retry changes.
  // Only these texts: PgBouncer (1.18) sends 08P01 for everything, its outages too (server down, pool
  // full, wait timeouts), which stay "connection failed" below.
  {
    sqlstate: "08P01",
    message: /unsupported startup parameter/i,
    reason: `a pooler refused li's session settings (li sends ${SENT_AT_STARTUP} at startup: configure the pooler to pass or ignore them, docs/postgres.md "Behind a connection pooler")`,
    unreachable: false,
  },
  // PgBouncer's own login refusals ("SASL authentication failed", "password authentication failed",
  // "no such user", its [databases] lacking the name): the same refusals as the server's 28 and 3D000.
  { sqlstate: "08P01", message: /authentication failed|no such user/i, reason: "authentication failed (at the pooler)", unreachable: false },
  { sqlstate: "08P01", message: /^no such database/i, reason: "no such database (at the pooler)", unreachable: false },
  { sqlstate: "08", reason: "connection failed", unreachable: true },
  { sqlstate: "53", reason: "the server is out of resources (disk, memory or connections)", unreachable: true },
  { sqlstate: "57014", reason: "statement timed out", unreachable: true },
  { sqlstate: "55P03", reason: "lock wait timed out", unreachable: true },
  // The session sat idle inside a transaction past its limit (client.ts idleInTransactionMs: a process
  // stalled mid-transaction); the server rolled it back and closed the session, so a retry is safe.
  { sqlstate: "25P03", reason: "the server ended the session, idle inside a transaction past its limit", unreachable: true },
  // PgBackend.transaction retries these; one that keeps recurring is reported, not li's bug.
  { sqlstate: "40", reason: "the server aborted the transaction (deadlock or serialization failure)", unreachable: true },
  { sqlstate: "57P", reason: "the server is shutting down or restarting", unreachable: true },
  { sqlstate: "25006", reason: "read-only (a standby, or default_transaction_read_only)", unreachable: false },
  { sqlstate: "58", reason: "the server failed (system error)", unreachable: false },
  { sqlstate: "XX", reason: "the server failed (internal error)", unreachable: false },
];

function field(error: unknown, name: "code" | "errno"): string | null {
  if (!(error instanceof Error)) return null;
  const value = (error as unknown as Record<string, unknown>)[name];
  return typeof value === "string" && value !== "" ? value : null;
}

/** The fault behind an error of Bun's PostgreSQL client, or null when it is not about the ledger. */
export function classifyPgError(error: unknown, password?: string): PgFault | null {
  const code = field(error, "code");
  if (code === null) return null;
  const message = scrubPassword((error as Error).message, password);
  // TLS verification fails with OpenSSL's codes (DEPTH_ZERO_SELF_SIGNED_CERT, CERT_HAS_EXPIRED, …).
  if (TLS_VERIFY.test(code)) return { reason: `the server's TLS certificate was refused: ${message} (${code})`, unreachable: false };
  if (!code.startsWith("ERR_POSTGRES_")) return null;
  const sqlstate = field(error, "errno");
  if (sqlstate !== null) {
    const said = (error as Error).message;
    const fault = SERVER_FAULTS.find((f) => sqlstate.startsWith(f.sqlstate) && (f.message?.test(said) ?? true));
    return fault ? { reason: `${fault.reason}: ${message} (SQLSTATE ${sqlstate})`, unreachable: fault.unreachable } : null;
  }
  const fault = CLIENT_FAULTS[code];
  return fault ? { reason: `${fault.reason} (${code})`, unreachable: fault.unreachable } : null;
}

/** A ledger failure as the exit-78 error naming `name` (host, port, database), or null. */
export function asPgLedgerError(error: unknown, name: string, password?: string): LedgerUnavailableError | null {
  if (error instanceof LedgerUnavailableError) return error;
  const fault = classifyPgError(error, password);
  return fault ? new LedgerUnavailableError(name, fault.reason, { unreachable: fault.unreachable }) : null;
}
