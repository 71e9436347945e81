// A stand-in for a part of the PostgreSQL backend that is not in this build yet: every call fails with
// one line saying which part (exit 78), instead of pretending to work. Removed once the part lands.

import { LedgerUnavailableError } from "../../util/errors.ts";

/** `ledger` names the ledger (host, port, database) in the refusal. */
export function notYetOnPostgres<T extends object>(ledger: string, what: string): T {
  return new Proxy({} as T, {
    get: (_target, property) =>
      typeof property === "symbol" || property === "then"
        ? undefined
        : () => Promise.reject(new LedgerUnavailableError(ledger, `${what} (${property}) are not available on PostgreSQL in this build of li yet`)),
  });
}
