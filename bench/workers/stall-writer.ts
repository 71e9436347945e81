// A concurrent writer for bench/replay.ts: guarded writes in a loop until the stop file appears; prints
// the latency of each (ms) as JSON, so the bench sees the longest stall another process causes it.
// Usage: bun stall-writer.ts LI_HOME PREFIX STOP_FILE   (LI_DB, when set, names the ledger, as for li)
import { existsSync } from "node:fs";
import { openLedger } from "../../src/ledger/open.ts";
import { resolvePaths } from "../../src/ledger/location.ts";

const [home, prefix, stop] = process.argv.slice(2) as [string, string, string];
const ledger = openLedger(resolvePaths({ env: { LI_HOME: home, ...(process.env.LI_DB ? { LI_DB: process.env.LI_DB } : {}) } }), { create: false });
const latencies: number[] = [];
await ledger.ready(); // connected before the first write is timed
process.stdout.write("ready\n");
for (let i = 0; !existsSync(stop); i++) {
  const t0 = performance.now();
  const row = await ledger.createEntity("invocation", { id: `${prefix}-${i}` });
  await ledger.updateStatus("invocation", row.id, { newStatus: "completed", reasonCode: "run.completed.ok", expectedStatuses: ["running"] });
  latencies.push(performance.now() - t0);
}
ledger.close();
process.stdout.write(JSON.stringify(latencies) + "\n");
