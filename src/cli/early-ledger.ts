// Starts opening the command's ledger before the rest of li loads, when opening it means waiting on a
// server (src/ledger/early-open.ts): it looks ahead the way main.ts will route (route.ts) and never
// reports anything itself — whatever is wrong with argv or the location, main.ts says it.

import { openEarly } from "../ledger/early-open.ts";
import { holdLedgerLong } from "../ledger/slot-use.ts";
import { resolvePaths, type LedgerLocation } from "../ledger/location.ts";
import { splitArgv, walk } from "./route.ts";
import { isGroup } from "./tree-node.ts";

export async function openLedgerEarly(argv: readonly string[]): Promise<void> {
  let location: LedgerLocation;
  let home: string;
  let use: "reads" | "writes";
  try {
    const { tokens, dbFlag, wantsHelp } = splitArgv(argv);
    if (wantsHelp) return;
    // The cheap test first: only a postgres:// location has anything to start.
    const paths = resolvePaths({ dbFlag });
    location = paths.ledger;
    home = paths.home;
    if (location.kind !== "postgres") return;
    const { node } = walk(tokens);
    if (isGroup(node)) return;
    // main.ts loads the same module right after (the module cache keeps it).
    const loaded = await node.load();
    const need = loaded.ledger;
    if (need === "none") return;
    if (loaded.longLived) holdLedgerLong();
    use = need === "reads" ? "reads" : "writes";
  } catch {
    return;
  }
  openEarly(location, use, home);
  // One turn of the event loop, so the connection's first packets leave before main's modules load.
  await new Promise((resolve) => setImmediate(resolve));
}
