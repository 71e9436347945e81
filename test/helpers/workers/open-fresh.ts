// A contender opening (and migrating) a fresh ledger (test/helpers/race.ts), then writing one row.
// Prints {"enteredAt", "leftAt"}: the interval of the open, the contested part.
import { openLedger } from "../../../src/ledger/open.ts";
import { resolvePaths } from "../../../src/ledger/location.ts";
import { atStartLine, enter, raceClock } from "../race.ts";

const [home, raceDir] = process.argv.slice(2) as [string, string];
await atStartLine(raceDir);
const enteredAt = enter(raceDir);
const ledger = openLedger(resolvePaths({ env: { LI_HOME: home } }), { create: true });
const leftAt = raceClock();
await ledger.createEntity("team");
ledger.close();
process.stdout.write(JSON.stringify({ enteredAt, leftAt }) + "\n");
