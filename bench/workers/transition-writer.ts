// One of several concurrent writer processes for bench/transitions.ts.
import { openLedger } from "../../src/ledger/open.ts";
import { resolvePaths } from "../../src/ledger/location.ts";

const [home, prefix, count, startAt] = process.argv.slice(2) as [string, string, string, string];
const ledger = openLedger(resolvePaths({ env: { LI_HOME: home } }), { create: false });
while (Date.now() < Number(startAt)) await Bun.sleep(1);
let errors = 0;
for (let i = 0; i < Number(count); i++) {
  try {
    const ok = await ledger.updateStatus("invocation", `${prefix}-${i}`, { newStatus: "completed", reasonCode: "run.completed.ok", expectedStatuses: ["running"] });
    if (!ok) errors++;
  } catch {
    errors++;
  }
}
ledger.close();
process.stdout.write(JSON.stringify({ errors, endedAt: Date.now() }));
