// A real process racing guarded writes: waits for a start time, then tries every id once, printing its wins.
import { openLedger } from "../../../src/ledger/open.ts";
import { resolvePaths } from "../../../src/ledger/location.ts";

const [home, idsFile, startAt, status] = process.argv.slice(2) as [string, string, string, string];
const ids = (await Bun.file(idsFile).text()).split("\n").filter(Boolean);
const ledger = openLedger(resolvePaths({ env: { LI_HOME: home } }), { create: false });
while (Date.now() < Number(startAt)) await Bun.sleep(1);
const wins: string[] = [];
for (const id of ids) {
  const reason = status === "completed" ? "run.completed.ok" : "run.failed.exception";
  if (await ledger.updateStatus("invocation", id, { newStatus: status, reasonCode: reason, expectedStatuses: ["running"] })) wins.push(id);
}
ledger.close();
process.stdout.write(wins.join("\n") + "\n");
