// How long a command waits for an unreachable ledger (src/ledger/patience.ts), told once on stderr.

import { DEFAULT_PATIENCE_SECONDS, type Patience } from "../ledger/patience.ts";
import { formatDuration, parseDuration } from "../util/duration.ts";
import { writeNote } from "./io.ts";

/** Waits `seconds` for an unreachable ledger, saying so once: the ledger, the reason, and for how long. */
export function notedPatience(seconds: number): Patience {
  return { seconds, onWait: (error) => writeNote(`${error.message}; trying again for up to ${formatDuration(seconds)}`) };
}

/** `--ledger-retry` (LEDGER_RETRY_ARG) in seconds, else `fallback` (10 s unless a command has a deadline of its own). */
export function ledgerRetrySeconds(args: Record<string, unknown>, fallback = DEFAULT_PATIENCE_SECONDS): number {
  const flag = args["ledger-retry"];
  return typeof flag === "string" ? parseDuration(flag, "--ledger-retry", { allowZero: true }) : fallback;
}
