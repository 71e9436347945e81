// Which failure of the ledger an error is (exit 78, one line naming the ledger), whichever backend raised
// it: each adapter classifies its own driver's errors, and this is the one place that asks them all.
// No `node:*` imports: every command's error path loads it.

import { LedgerUnavailableError } from "../util/errors.ts";
import { asLedgerError as sqliteFailure } from "./sqlite/errors.ts";

type Classifier = (error: unknown, ledgerName: string) => LedgerUnavailableError | null;

/** Every adapter's classifier; one that does not recognise an error returns null. */
const CLASSIFIERS: readonly Classifier[] = [sqliteFailure];

/** The ledger failure behind `error`, named by `ledgerName` (a path, or a URL without its password); null when it is not one. */
export function ledgerFailureOf(error: unknown, ledgerName: string): LedgerUnavailableError | null {
  if (error instanceof LedgerUnavailableError) return error;
  for (const classify of CLASSIFIERS) {
    const failure = classify(error, ledgerName);
    if (failure) return failure;
  }
  return null;
}
