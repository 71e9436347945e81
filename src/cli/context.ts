// Per-process CLI state: the global --db flag, the words after `--`, and opening the ledger once.

import { openLedger } from "../ledger/open.ts";
import { resolvePaths, type Paths } from "../ledger/location.ts";
import type { Ledger } from "../ledger/ledger.ts";

import { cliContext } from "./globals.ts";

export { cliContext };

let paths: Paths | undefined;

export function cliPaths(): Paths {
  paths ??= resolvePaths({ dbFlag: cliContext.dbFlag });
  return paths;
}

/** Opens the ledger for a command; `create: false` for read-only commands (§16). */
export function cliLedger(opts: { create: boolean }): Ledger {
  return openLedger(cliPaths(), opts);
}
