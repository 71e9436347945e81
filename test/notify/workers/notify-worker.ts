// A second process for race tests: waits for a start file, then pushes one event or runs one delivery pass.
import { existsSync } from "node:fs";
import { openLedger } from "../../../src/ledger/open.ts";
import { resolvePaths } from "../../../src/ledger/location.ts";
import { deliverOnce } from "../../../src/notify/deliver.ts";
import { pushTerminal } from "../../../src/notify/push.ts";

const [dbPath, mode, hostId, startFile, transitionId] = process.argv.slice(2);
if (!dbPath || !mode || !hostId || !startFile) throw new Error("usage: notify-worker DB push|deliver HOST START_FILE [TRANSITION_ID]");
const ledger = openLedger(resolvePaths({ dbFlag: dbPath }), { create: false });
while (!existsSync(startFile)) await Bun.sleep(1);
const summary =
  mode === "push"
    ? await pushTerminal(ledger, { transitionId: transitionId!, terminalEvent: true }, { hostId })
    : await deliverOnce(ledger, { hostId });
process.stdout.write(JSON.stringify({ delivered: summary.delivered, skipped: summary.skipped_claimed }) + "\n");
ledger.close();
