// Opening the ledger for a command that writes (or needs the full backend); read-only views use
// openReads(cliPaths()) instead, which loads neither drizzle nor zod.

import { openLedger } from "../ledger/open.ts";
import type { Ledger } from "../ledger/ledger.ts";
import { cliContext } from "./globals.ts";
import { cliPaths } from "./paths.ts";

export { cliContext, cliPaths };

/** Opens the ledger for a command; `create: false` for read-only commands (§16). */
export function cliLedger(opts: { create: boolean }): Ledger {
  return openLedger(cliPaths(), opts);
}
