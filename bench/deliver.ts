// Benchmark `deliver` (SPEC §9.5, §12.6): with `dist/li watch` running, a terminal commit whose push was lost (the
// transition is applied and nobody pushes) → the handler started, p50/p95 over N events, one at a time;
// against the floor of the bench starting the same handler itself, N times in the same run.
// Usage: bun run build && bun bench/deliver.ts [N=500]

import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { resolvePaths } from "../src/ledger/location.ts";
import { openLedger } from "../src/ledger/open.ts";
import { addHandler } from "../src/notify/consumers.ts";
import { handlerHost } from "../src/notify/host.ts";
import { againstHandlerFloor, handlerSpawnFloorMs, wallNs } from "./floor.ts";

const N = Number(process.argv[2] ?? 500);
const LI = resolve(import.meta.dir, "../dist/li");
if (!existsSync(LI)) throw new Error(`build the binary first: ${LI} is missing`);

const home = mkdtempSync(join(tmpdir(), "li-bench-deliver-"));
const marks = join(home, "started");
const ledger = openLedger(resolvePaths({ env: { LI_HOME: home } }), { create: true });
// The handler's first act is to write the wall clock (ns): the measure includes the exec of sh and date.
await addHandler(ledger, { name: "mark", kinds: ["invocation"], ids: [], argv: ["/bin/sh", "-c", 'date +%s%N >> "$0"', marks], hostId: handlerHost() });

const env: Record<string, string> = {};
for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith("LI_")) env[k] = v;
env.LI_HOME = home;
const watcher = Bun.spawn([LI, "watch", "--sweep-interval", "1h"], { env, stdin: "ignore", stdout: "ignore", stderr: "inherit" });
await Bun.sleep(500); // let it start and arm its wake-up

const lineCount = () => (existsSync(marks) ? readFileSync(marks, "utf8").split("\n").length - 1 : 0);

const commits: bigint[] = [];
for (let i = 0; i < N; i++) {
  await ledger.createEntity("invocation", { id: `inv-${i}` });
  // The push is "lost": the committing process never runs the handler; only the watcher can.
  await ledger.transition("invocation", `inv-${i}`, { newStatus: "completed", reasonCode: "run.completed.ok" });
  commits.push(wallNs());
  const deadline = Date.now() + 10_000;
  while (lineCount() < i + 1) {
    if (Date.now() > deadline) throw new Error(`event ${i}: the watcher did not start the handler within 10 s`);
    await Bun.sleep(1);
  }
}
watcher.kill("SIGTERM");
const code = await watcher.exited;
ledger.close();

const started = readFileSync(marks, "utf8").trim().split("\n").map((l) => BigInt(l));
const ms = started.map((s, i) => Number(s - commits[i]!) / 1e6);
// Measured once the watcher has stopped, so the two never compete for the machine.
const floor = await handlerSpawnFloorMs(join(home, "floor"), N);
const against = againstHandlerFloor(ms, floor);
console.log(`deliver: commit with no push → handler started by li watch, ${N} events: ${against.latency} (watcher exit ${code})`);
console.log(`deliver: floor, the bench starting the same handler itself, ${N} times: ${against.floor}`);
console.log(JSON.stringify({ bench: "deliver", n: N, ...against.figures, watcher_exit: code }));
