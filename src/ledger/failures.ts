// Which failure of the ledger an error is (exit 78, one line naming the ledger), whichever backend raised
// it: each adapter classifies its own driver's errors, and this is the one place that asks them all.
// No `node:*` imports: every command's error path loads it.

import { LedgerUnavailableError } from "../util/errors.ts";
import { asLedgerError as sqliteFailure } from "./sqlite/errors.ts";

type Classifier = (error: unknown, ledgerName: string, password?: string) => LedgerUnavailableError | null;

/**
 * PostgreSQL's classifier, loaded (synchronously) the first time an error gets past SQLite's: a
 * SQLite process never pays for it on its start-up path, and a PostgreSQL error always reaches it.
 */
const postgresFailure: Classifier = (error, ledgerName, password) =>
  (require("./postgres/errors.ts") as typeof import("./postgres/errors.ts")).asPgLedgerError(error, ledgerName, password);

/** Every adapter's classifier; one that does not recognise an error returns null. */
const CLASSIFIERS: readonly Classifier[] = [sqliteFailure, postgresFailure];

/**
 * The ledger failure behind `error`, named by `ledgerName` (a path, or a URL without its password); null
 * when it is not one. `password` (a PostgreSQL ledger's) is scrubbed from any text the driver wrote.
 */
export function ledgerFailureOf(error: unknown, ledgerName: string, password?: string): LedgerUnavailableError | null {
  if (error instanceof LedgerUnavailableError) return error;
  for (const classify of CLASSIFIERS) {
    const failure = classify(error, ledgerName, password);
    if (failure) return failure;
  }
  return null;
}
