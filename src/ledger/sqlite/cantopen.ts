// SQLite says only "unable to open database file": this finds out why, from the file system, when
// it happens (node:fs is loaded then, never on the read-only commands' start-up path).

import { LedgerUnavailableError } from "../../util/errors.ts";
import { asLedgerError } from "./errors.ts";

/** What stands in the way of opening `path` in WAL mode, or null when nothing visible does. */
function obstacle(path: string): string | null {
  const fs = require("node:fs") as typeof import("node:fs");
  const dir = path.slice(0, path.lastIndexOf("/")) || "/";
  const denied = (target: string, mode: number): string | null => {
    try {
      fs.accessSync(target, mode);
      return null;
    } catch (error) {
      return (error as NodeJS.ErrnoException).code ?? "denied";
    }
  };
  const file = denied(path, fs.constants.R_OK);
  if (file) return `the file cannot be read (${file})`;
  const directory = denied(dir, fs.constants.W_OK);
  // WAL mode keeps state.db-wal and state.db-shm beside the file: a reader needs them too.
  if (directory) return `its directory ${dir} is not writable (${directory}), and SQLite must keep its -wal and -shm files there`;
  return null;
}

/** `error` with the reason SQLite left out, when it is SQLITE_CANTOPEN and the file system can tell. */
export function explainCantOpen(error: LedgerUnavailableError, cause: unknown): LedgerUnavailableError {
  const code = (cause as { code?: unknown } | null)?.code;
  if (typeof code !== "string" || !code.startsWith("SQLITE_CANTOPEN")) return error;
  const why = obstacle(error.path);
  return why ? new LedgerUnavailableError(error.path, `cannot be opened: ${why}`, { unreachable: error.unreachable, cause }) : error;
}

/** The opens' conversion: the classified ledger error, with what the file system says when SQLite could not open the file. */
export function explained(error: unknown, path: string): LedgerUnavailableError | null {
  const converted = asLedgerError(error, path);
  return converted && !(error instanceof LedgerUnavailableError) ? explainCantOpen(converted, error) : converted;
}
