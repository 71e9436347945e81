// A real process opening (and migrating) a fresh ledger at a given moment, then writing one row.
import { openLedger } from "../../../src/ledger/open.ts";
import { resolvePaths } from "../../../src/ledger/location.ts";

const [home, startAt] = process.argv.slice(2) as [string, string];
while (Date.now() < Number(startAt)) await Bun.sleep(1);
const ledger = openLedger(resolvePaths({ env: { LI_HOME: home } }), { create: true });
await ledger.createEntity("team");
ledger.close();
