// A watcher's cron pass in its own process (test/schedule/fire.test.ts): the ledger's clock is injected
// and set to each of the times in TIMES_FILE in turn; after its first pass it is held until every
// contender has entered, so the remaining passes are contested. Prints {"actions", "taken", "enteredAt", "leftAt"}.
import { openLedger } from "../../../src/ledger/open.ts";
import { firePass, type FireAction } from "../../../src/schedule/fire.ts";
import { queueSubmit } from "../../../src/schedule/submit-fire.ts";
import { pathsForHome } from "../../helpers/backends.ts";
import { atStartLine, enter, heldUntilRelease, raceClock } from "../../helpers/race.ts";

const [home, timesFile, raceDir, hostId] = process.argv.slice(2) as [string, string, string, string];
const times = (await Bun.file(timesFile).text()).split("\n").filter(Boolean).map(Number);
let clock = times[0]!;
const ledger = openLedger(pathsForHome(home), { create: false, now: () => clock });
const submit = queueSubmit(ledger);
await ledger.backend.cron.listSchedules(); // connected (and migrated) before the start line
await atStartLine(raceDir);
const enteredAt = enter(raceDir);
const actions: FireAction[] = [];
let taken = 0;
for (const [round, now] of times.entries()) {
  clock = now;
  const pass = await firePass(ledger, now, { hostId, submit });
  actions.push(...pass.actions);
  taken += pass.taken;
  if (round === 0) await heldUntilRelease(raceDir);
}
const leftAt = raceClock();
ledger.close();
process.stdout.write(JSON.stringify({ actions, taken, enteredAt, leftAt }) + "\n");
