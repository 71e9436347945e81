// This host's wall clock in Unix seconds: the one place li reads it, so a test can set one host's clock
// ahead or behind the others (LI_TEST_CLOCK_SKEW) and prove the ledger's clock does not depend on it.

import { UsageError } from "./errors.ts";

/** Test setting: seconds added to this process's wall clock (negative: behind). Not for production use. */
export const CLOCK_SKEW_ENV = "LI_TEST_CLOCK_SKEW";

/** A skew past a year is a typo, not a test. */
const MAX_SKEW_SECONDS = 366 * 24 * 3600;

export function parseClockSkew(value: string | undefined): number {
  if (value === undefined || value.trim() === "") return 0;
  const skew = Number(value);
  if (!/^\s*[-+]?\d+(\.\d+)?\s*$/.test(value) || !Number.isFinite(skew) || Math.abs(skew) > MAX_SKEW_SECONDS) {
    throw new UsageError(`${CLOCK_SKEW_ENV}: expected a number of seconds within ±${MAX_SKEW_SECONDS}`);
  }
  return skew;
}

/** Read once per process, on the first reading of the clock. */
let skew: number | null = null;

/** Now, in Unix seconds, on this host's clock (skewed only when LI_TEST_CLOCK_SKEW says so). */
export function hostClock(): number {
  return Date.now() / 1000 + (skew ??= parseClockSkew(process.env[CLOCK_SKEW_ENV]));
}
