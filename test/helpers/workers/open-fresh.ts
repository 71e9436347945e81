// A contender opening (and migrating) a fresh ledger (test/helpers/race.ts), then writing one row.
// Prints {"enteredAt", "leftAt"}: the interval of the open and the first write, the contested part (on
// PostgreSQL the open connects and migrates at the first operation).
import { openLedger } from "../../../src/ledger/open.ts";
import { pathsForHome } from "../backends.ts";
import { atStartLine, enter, raceClock } from "../race.ts";

const [home, raceDir] = process.argv.slice(2) as [string, string];
await atStartLine(raceDir);
const enteredAt = enter(raceDir);
const ledger = openLedger(pathsForHome(home), { create: true });
await ledger.createEntity("team");
const leftAt = raceClock();
ledger.close();
process.stdout.write(JSON.stringify({ enteredAt, leftAt }) + "\n");
