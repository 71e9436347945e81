// The paths every command relies on, checked to be the user's own before any is used (SPEC §18 "Other
// users"): LI_HOME, the SQLite ledger file, the runs root, the spool, the global settings file and the trust store.

import type { Paths } from "../ledger/location.ts";
import { checkOwnershipAsync, ForeignPathError } from "../util/ownership.ts";
import { writeNote } from "./io.ts";

/** Throws ForeignPathError (exit 78, one line naming the path, its owner and mode) on the first path that is not ours. */
export async function requireOwnedPaths(paths: Paths): Promise<void> {
  const checked: [string, string][] = [
    [paths.home, "LI_HOME"],
    [`${paths.home}/settings.yaml`, "the settings file"],
    [`${paths.home}/trusted`, "the trust store"],
    [`${paths.home}/spool`, "the spool"],
    [paths.runsRoot, "the runs root"],
  ];
  if (paths.ledger.kind === "sqlite") checked.push([paths.ledger.path, "the ledger"]);
  const verdicts = await Promise.all(checked.map(([path, what]) => checkOwnershipAsync(path, what)));
  for (const verdict of verdicts) {
    if (!verdict.ok) throw new ForeignPathError(verdict.problem);
  }
  for (const verdict of verdicts) if (verdict.ok && verdict.warning !== undefined) writeNote(verdict.warning);
}
