// A concurrent writer for bench/prune.ts: guarded creations in a loop, timing each one (start → commit).
// Prints "ready", then on a line on stdin (or stdin closing) prints its [wall-clock start ms, latency ms] pairs as JSON and exits.
import { Ledger } from "../../src/ledger/ledger.ts";
import { SqliteBackend } from "../../src/ledger/sqlite/backend.ts";
import { openSqlite } from "../../src/ledger/sqlite/open.ts";

const [dbPath] = process.argv.slice(2) as [string];
const ledger = new Ledger(new SqliteBackend(openSqlite(dbPath, { create: false, busyTimeoutMs: 60_000 }), dbPath));
const samples: Array<[number, number]> = [];
let stop = false;
(async () => {
  for await (const _ of console) {
    stop = true;
    break;
  }
  stop = true;
})();
process.stdout.write("ready\n");
while (!stop) {
  const t0 = performance.now();
  await ledger.createEntity("invocation");
  // Wall-clock starts (not performance.now(), whose origin is per process) let the bench tell idle writes from writes during the prune.
  samples.push([performance.timeOrigin + t0, performance.now() - t0]);
  await Bun.sleep(2);
}
process.stdout.write(JSON.stringify(samples) + "\n");
ledger.close();
