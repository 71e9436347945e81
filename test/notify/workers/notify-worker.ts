// A contender for race tests: opens the ledger, says it is ready, waits at the start line, then pushes one
// event or runs one delivery pass, recording when it entered and left that contested section.
// Files in RACE_DIR: it writes ready.<pid> once the ledger is open and entered.<pid> as it enters; it
// waits for `start`. Prints {"delivered", "skipped", "enteredAt", "leftAt"} (epoch ms, sub-millisecond).
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { openLedger } from "../../../src/ledger/open.ts";
import { resolvePaths } from "../../../src/ledger/location.ts";
import { deliverOnce } from "../../../src/notify/deliver.ts";
import { pushTerminal } from "../../../src/notify/push.ts";

const [dbPath, mode, hostId, raceDir, transitionId] = process.argv.slice(2);
if (!dbPath || !mode || !hostId || !raceDir) throw new Error("usage: notify-worker DB push|deliver HOST RACE_DIR [TRANSITION_ID]");
const ledger = openLedger(resolvePaths({ dbFlag: dbPath }), { create: false });
writeFileSync(join(raceDir, `ready.${process.pid}`), "");
// The start line: a 1 ms poll keeps the contenders' entries close together.
while (!existsSync(join(raceDir, "start"))) await Bun.sleep(1);
const clock = () => performance.timeOrigin + performance.now();
const enteredAt = clock();
writeFileSync(join(raceDir, `entered.${process.pid}`), String(enteredAt));
const summary =
  mode === "push"
    ? await pushTerminal(ledger, { transitionId: transitionId!, terminalEvent: true }, { hostId })
    : await deliverOnce(ledger, { hostId });
const leftAt = clock();
process.stdout.write(JSON.stringify({ delivered: summary.delivered, skipped: summary.skipped_claimed, enteredAt, leftAt }) + "\n");
ledger.close();
