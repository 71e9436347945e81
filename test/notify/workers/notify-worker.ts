// A contender for race tests (test/helpers/race.ts): opens the ledger, waits at the start line, then pushes
// one event or runs one delivery pass. Prints {"delivered", "skipped", "enteredAt", "leftAt"}.
import { openLedger } from "../../../src/ledger/open.ts";
import { pathsForHome } from "../../helpers/backends.ts";
import { deliverOnce } from "../../../src/notify/deliver.ts";
import { pushTerminal } from "../../../src/notify/push.ts";
import { atStartLine, enter, raceClock } from "../../helpers/race.ts";

const [liHome, mode, hostId, raceDir, transitionId] = process.argv.slice(2);
if (!liHome || !mode || !hostId || !raceDir) throw new Error("usage: notify-worker LI_HOME push|deliver HOST RACE_DIR [TRANSITION_ID]");
const ledger = openLedger(pathsForHome(liHome), { create: false });
await atStartLine(raceDir);
const enteredAt = enter(raceDir);
const summary =
  mode === "push"
    ? await pushTerminal(ledger, { transitionId: transitionId!, terminalEvent: true }, { hostId })
    : await deliverOnce(ledger, { hostId });
const leftAt = raceClock();
process.stdout.write(JSON.stringify({ delivered: summary.delivered, skipped: summary.skipped_claimed, enteredAt, leftAt }) + "\n");
ledger.close();
