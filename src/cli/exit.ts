// The one mapping from an error to li's documented exit code and its one line (§16, §18): every
// command's failure, the foreground leg's and the detached supervisor's, goes through it.

import { TransitionRejectedError } from "../ledger/errors.ts";
import { describeLocation, passwordOfLocation } from "../ledger/location.ts";
import { ledgerFailureOf } from "../ledger/failures.ts";
import { ExitCode, LedgerUnavailableError, NotFoundError, UsageError } from "../util/errors.ts";
import { ForeignPathError } from "../util/ownership.ts";
import { cliPaths } from "./paths.ts";

export interface ExitReport {
  exit: number;
  /** One line, without the `li: ` prefix. */
  message: string;
}

/** The exit code and message for `error`; 70 ("internal error") only for what li cannot explain: its own bugs. */
export function exitFor(error: unknown): ExitReport {
  // Both carry their own exit code (UsageError also covers its subclass TransitionValidationError).
  if (error instanceof UsageError || error instanceof LedgerUnavailableError || error instanceof ForeignPathError) return { exit: error.exitCode, message: error.message };
  if (error instanceof NotFoundError) return { exit: ExitCode.usage, message: error.message };
  if (error instanceof TransitionRejectedError) return { exit: ExitCode.failure, message: error.message };
  // citty's own parse errors (missing positional, bad enum value): usage errors.
  if (error instanceof Error && error.name === "CLIError") return { exit: ExitCode.usage, message: error.message };
  // A driver's failure that no adapter boundary converted (e.g. a read on a damaged file): the same 78.
  const ledgerError = ledgerFailureOf(error, ledgerDescription(), ledgerPassword());
  if (ledgerError) return { exit: ledgerError.exitCode, message: ledgerError.message };
  // The environment refused (a read-only or full disk, a permission): node's text names the path.
  if (isSystemError(error)) return { exit: ExitCode.unavailable, message: `cannot go on: ${error.message}` };
  return { exit: ExitCode.internal, message: `internal error: ${error instanceof Error ? error.message : String(error)}` };
}

/** The ledger this process uses, as printable text (a URL without its password). */
function ledgerDescription(): string {
  try {
    return describeLocation(cliPaths().ledger);
  } catch {
    return "(the ledger)";
  }
}

/** The password of a PostgreSQL ledger's URL (or PGPASSWORD), to scrub from a driver's text; none for SQLite. */
function ledgerPassword(): string | undefined {
  try {
    return passwordOfLocation(cliPaths().ledger);
  } catch {
    return undefined;
  }
}

/** An error from the operating system (ENOSPC, EROFS, EACCES…), as node:fs raises it. */
function isSystemError(error: unknown): error is Error {
  if (!(error instanceof Error)) return false;
  const { code, syscall } = error as { code?: unknown; syscall?: unknown };
  return typeof code === "string" && /^E[A-Z0-9]+$/.test(code) && typeof syscall === "string";
}
