// A contender racing guarded writes (test/helpers/race.ts): tries every id once, printing its wins and its
// interval. After its first attempt it is held until every contender has entered, so the remaining rounds
// are contested by construction. Prints {"wins": [...], "enteredAt", "leftAt"}.
import { openLedger } from "../../../src/ledger/open.ts";
import { pathsForHome } from "../backends.ts";
import { atStartLine, enter, heldUntilRelease, raceClock } from "../race.ts";

const [home, idsFile, raceDir, status] = process.argv.slice(2) as [string, string, string, string];
const ids = (await Bun.file(idsFile).text()).split("\n").filter(Boolean);
const ledger = openLedger(pathsForHome(home), { create: false });
const reason = status === "completed" ? "run.completed.ok" : "run.failed.exception";
await atStartLine(raceDir);
const enteredAt = enter(raceDir);
const wins: string[] = [];
for (const [round, id] of ids.entries()) {
  if (await ledger.updateStatus("invocation", id, { newStatus: status, reasonCode: reason, expectedStatuses: ["running"] })) wins.push(id);
  if (round === 0) await heldUntilRelease(raceDir);
}
const leftAt = raceClock();
ledger.close();
process.stdout.write(JSON.stringify({ wins, enteredAt, leftAt }) + "\n");
