// The paths this process uses (§3), resolved once from --db, LI_DB, LI_HOME and LI_RUNS_ROOT.
// Free of the ledger's write path so read-only commands stay cheap to start.

import { resolvePaths, type Paths } from "../ledger/location.ts";
import { cliContext } from "./globals.ts";

let paths: Paths | undefined;

export function cliPaths(): Paths {
  paths ??= resolvePaths({ dbFlag: cliContext.dbFlag });
  return paths;
}
