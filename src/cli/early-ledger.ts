// Starts opening the command's ledger before the rest of li loads, when opening it means waiting on a
// server (src/ledger/early-open.ts), and begins the ownership checks of its paths (owned-paths.ts): it
// looks ahead the way main.ts will route (route.ts) and never reports anything itself — whatever is wrong
// with argv, the location or a path, main.ts says it.

import { openEarly } from "../ledger/early-open.ts";
import { holdLedgerLong } from "../ledger/slot-use.ts";
import { resolvePaths, type LedgerLocation } from "../ledger/location.ts";
import { splitArgv, walk } from "./route.ts";
import { isGroup } from "./tree-node.ts";

/**
 * `checkPaths: false` (a warm supervisor, which may wait minutes for its request): no ownership checks are
 * begun, so none older than the command itself is ever judged; main.ts then checks afresh.
 */
export async function openLedgerEarly(argv: readonly string[], options: { checkPaths?: boolean } = {}): Promise<void> {
  let location: LedgerLocation;
  let home: string;
  let use: "reads" | "writes";
  try {
    const { tokens, dbFlag, wantsHelp } = splitArgv(argv);
    if (wantsHelp) return;
    const paths = resolvePaths({ dbFlag });
    location = paths.ledger;
    home = paths.home;
    const { node } = walk(tokens);
    if (isGroup(node)) return;
    // main.ts loads the same module right after (the module cache keeps it).
    const loaded = await node.load();
    const need = loaded.ledger;
    if (need === "none") return;
    // §18's ownership checks of the paths the command relies on begin now, their stats off li's thread
    // while main's modules load; main.ts judges them before anything is read from those paths.
    if (options.checkPaths !== false) (await import("./owned-paths.ts")).beginOwnedPathChecks(paths);
    if (location.kind !== "postgres") return;
    if (loaded.longLived) holdLedgerLong();
    use = need === "reads" ? "reads" : "writes";
  } catch {
    return;
  }
  openEarly(location, use, home);
  // One turn of the event loop, so the connection's first packets leave before main's modules load.
  await new Promise((resolve) => setImmediate(resolve));
}
