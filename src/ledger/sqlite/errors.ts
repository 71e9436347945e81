// The one classifier of SQLite's failures (SPEC §16–§18): which errors mean "the ledger cannot be
// written or read" (exit 78, one line naming the path and the reason) and which are li's own bugs.
// No `node:*` imports: the read-only commands' start-up path loads this module.

import { LedgerUnavailableError } from "../../util/errors.ts";

/** A failure of the ledger itself, as a user can act on it. */
export interface SqliteFault {
  /** Short and plain: what is wrong with the file or its disk. */
  reason: string;
  /**
   * §17's "unreachable" (disk full, busy past the timeout): worth retrying and, with the outages issue,
   * spooling. Anything else is a refusal: retrying the same file gives the same answer.
   */
  unreachable: boolean;
  /** The file's disk is full: retried at the final write, not waited for at setup (§20). */
  diskFull?: boolean;
}

/** Primary result codes (bun:sqlite reports extended ones, e.g. SQLITE_IOERR_WRITE, with the same prefix). */
const FAULTS: readonly { prefix: string; reason: string; unreachable: boolean; diskFull?: boolean }[] = [
  { prefix: "SQLITE_FULL", reason: "disk full", unreachable: true, diskFull: true },
  // The shared-memory file (-shm) could not grow: on a full disk, the first thing a new connection meets.
  { prefix: "SQLITE_IOERR_SHMSIZE", reason: "disk full", unreachable: true, diskFull: true },
  { prefix: "SQLITE_BUSY", reason: "locked by another process past the busy timeout", unreachable: true },
  { prefix: "SQLITE_LOCKED", reason: "locked by another process past the busy timeout", unreachable: true },
  { prefix: "SQLITE_READONLY", reason: "read-only", unreachable: false },
  { prefix: "SQLITE_IOERR", reason: "I/O error", unreachable: false },
  { prefix: "SQLITE_CORRUPT", reason: "corrupt, or not a li ledger", unreachable: false },
  { prefix: "SQLITE_NOTADB", reason: "not a SQLite database", unreachable: false },
  { prefix: "SQLITE_CANTOPEN", reason: "cannot be opened", unreachable: false },
  { prefix: "SQLITE_PERM", reason: "permission denied", unreachable: false },
  { prefix: "SQLITE_AUTH", reason: "permission denied", unreachable: false },
  { prefix: "SQLITE_NOLFS", reason: "too large for this filesystem", unreachable: false },
  { prefix: "SQLITE_PROTOCOL", reason: "locking protocol failed (a network filesystem?)", unreachable: false },
];

/** A table li's schema has is missing: the file is someone else's database (or a damaged ledger). */
const NO_SUCH_TABLE = /^no such table: (\S+)/;

function sqliteCode(error: unknown): string | null {
  if (!(error instanceof Error)) return null;
  const code = (error as { code?: unknown }).code;
  return typeof code === "string" && code.startsWith("SQLITE_") ? code : null;
}

/**
 * The fault behind a bun:sqlite error, or null when the error is not about the ledger file (a
 * constraint li should have prevented, a misuse: li's own bug, exit 70).
 */
export function classifySqliteError(error: unknown): SqliteFault | null {
  const code = sqliteCode(error);
  if (code === null) return null;
  const message = (error as Error).message;
  const missing = NO_SUCH_TABLE.exec(message);
  if (missing) return { reason: `not a li ledger (it has no table ${missing[1]})`, unreachable: false };
  const fault = FAULTS.find((f) => code === f.prefix || code.startsWith(`${f.prefix}_`));
  if (!fault) return null;
  // SQLite's own text says more than the code for extended results ("attempt to write a readonly database").
  return { reason: `${fault.reason}: ${message} (${code})`, unreachable: fault.unreachable, ...(fault.diskFull ? { diskFull: true } : {}) };
}

/** A zero-length (or table-less) file met by a command that does not create ledgers: nothing to read, and it is not li's to fill. */
export const EMPTY_FILE = "empty file, not a li ledger yet (a command that records, such as li agent, creates one)";

/**
 * Why an opened file is not a li ledger, or null when it is one li can use (or migrate). `version`
 * is its `user_version`; an empty database (no tables at all) is a new ledger for a writer to create.
 */
export function notALiLedger(tables: readonly string[], version: number): string | null {
  if (tables.length === 0) return version === 0 ? null : `not a li ledger (user_version ${version} but no tables)`;
  if (!tables.includes("__li_migrations")) return "not a li ledger (a SQLite database without li's tables)";
  return null;
}

/**
 * The adapter's conversion: a ledger failure as the exit-78 error naming `path`, or null for an error
 * that is not about the ledger. An error already converted is returned as it is.
 */
export function asLedgerError(error: unknown, path: string): LedgerUnavailableError | null {
  if (error instanceof LedgerUnavailableError) return error;
  const fault = classifySqliteError(error);
  return fault ? new LedgerUnavailableError(path, fault.reason, { unreachable: fault.unreachable, diskFull: fault.diskFull === true, cause: error }) : null;
}
