// Opening the ledger for a command that writes; main.ts imports this only for commands that declare
// `ledger: "existing" | "create"`, so read-only commands (which use openReads) never load drizzle or zod.

import { openLedger } from "../ledger/open.ts";
import type { Ledger } from "../ledger/ledger.ts";
import type { Patience } from "../ledger/patience.ts";
import { cliPaths } from "./paths.ts";

/** Opens the ledger for a command; `create: false` when it must already exist (§16). */
export function cliLedger(opts: { create: boolean; patience: Patience }): Ledger {
  return openLedger(cliPaths(), opts);
}
