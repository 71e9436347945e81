// The paths every command relies on, checked to be the user's own before any is used (SPEC §18 "Other
// users"): LI_HOME, the SQLite ledger file, the runs root, the spool, the global settings file and the trust store.

import type { Paths } from "../ledger/location.ts";
import { checkOwnershipAsync, ForeignPathError, type OwnershipVerdict } from "../util/ownership.ts";
import { writeNote } from "./io.ts";

/** The checks of one set of paths, begun: their verdicts in the order of `checkedPaths`. */
interface Begun {
  key: string;
  verdicts: Promise<OwnershipVerdict[]>;
}
let begun: Begun | null = null;

function checkedPaths(paths: Paths): [string, string][] {
  const checked: [string, string][] = [
    [paths.home, "LI_HOME"],
    [`${paths.home}/settings.yaml`, "the settings file"],
    [`${paths.home}/trusted`, "the trust store"],
    [`${paths.home}/spool`, "the spool"],
    [paths.runsRoot, "the runs root"],
  ];
  if (paths.ledger.kind === "sqlite") checked.push([paths.ledger.path, "the ledger"]);
  return checked;
}

/**
 * Begins the checks of `paths` (their stats run off li's thread) for requireOwnedPaths to take: the entry
 * point begins them before the rest of li loads (early-ledger.ts), so they cost a command no wait of its own.
 * Nothing is judged or reported here.
 */
export function beginOwnedPathChecks(paths: Paths): void {
  const checked = checkedPaths(paths);
  const verdicts = Promise.all(checked.map(([path, what]) => checkOwnershipAsync(path, what)));
  // A stat that failed is reported by requireOwnedPaths, which awaits the same promise.
  verdicts.catch(() => {});
  begun = { key: JSON.stringify(checked), verdicts };
}

/** Throws ForeignPathError (exit 78, one line naming the path, its owner and mode) on the first path that is not ours. */
export async function requireOwnedPaths(paths: Paths): Promise<void> {
  const checked = checkedPaths(paths);
  const key = JSON.stringify(checked);
  // Taken once: a later check (li trust's own, a second command in this process) looks afresh.
  const taken = begun?.key === key ? begun : null;
  begun = null;
  const verdicts = await (taken ? taken.verdicts : Promise.all(checked.map(([path, what]) => checkOwnershipAsync(path, what))));
  for (const verdict of verdicts) {
    if (!verdict.ok) throw new ForeignPathError(verdict.problem);
  }
  for (const verdict of verdicts) if (verdict.ok && verdict.warning !== undefined) writeNote(verdict.warning);
}
