// Benchmark `wake`: commit of a terminal status → `li wait`'s result line read from its stdout, as p50/p95/max
// over many waits, with file watching (the default) and with polling only at the default 1 s interval, in one run;
// against the floor of a bare fs.watch process echoing a file change as a line (bench/workers/watch-echo.ts).
// Usage: bun bench/wake.ts [--n 200] [--lanes 10]   (build dist/li first)

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openLedger } from "../src/ledger/open.ts";
import { resolvePaths } from "../src/ledger/location.ts";
import type { Ledger } from "../src/ledger/ledger.ts";
import { lineReader } from "../test/helpers/lines.ts";
import { r2, timedWake } from "./floor.ts";

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
};
const N = arg("n", 200);
const LANES = arg("lanes", 10);
const LI = join(import.meta.dir, "../dist/li");

const home = mkdtempSync(join(tmpdir(), "li-bench-wake-"));
const env = { ...process.env, LI_HOME: home, NO_COLOR: "1" };
const ledger: Ledger = openLedger(resolvePaths({ env: { LI_HOME: home } }), { create: true });
await ledger.createEntity("invocation", { id: "sentinel", status: "running" });
await ledger.updateStatus("invocation", "sentinel", { newStatus: "completed", reasonCode: "run.completed.ok" });

let counter = 0;
/** One wait: the sentinel line proves li wait is blocked; after `delayMs` commit the target and time the line. */
function oneWait(watch: boolean, delayMs: number): Promise<number> {
  const id = `target-${watch ? "w" : "p"}-${++counter}`;
  return timedWake(ledger, [LI, "wait"], { ...env, LI_WATCH_FILES: watch ? "1" : "0" }, "sentinel", id, delayMs);
}

function stats(ms: number[]) {
  const s = [...ms].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
  const r = (x: number) => Math.round(x * 1000) / 1000;
  return { n: s.length, p50_ms: r(at(0.5)), p95_ms: r(at(0.95)), max_ms: r(s.at(-1)!) };
}

/** The floor, `n` times: write a new value to a watched file a few ms apart, time until the echo process prints it. */
async function floorMs(n: number): Promise<number[]> {
  const dir = join(home, "floor");
  mkdirSync(dir);
  const proc = Bun.spawn([process.execPath, join(import.meta.dir, "workers/watch-echo.ts"), dir], { stdout: "pipe", stderr: "inherit" });
  const next = lineReader(proc.stdout);
  if ((await next()) !== "ready") throw new Error("the echo process did not start");
  const ms: number[] = [];
  for (let i = 1; i <= n; i++) {
    await Bun.sleep(2 + Math.random() * 10);
    const start = performance.now();
    writeFileSync(join(dir, "poke"), String(i));
    while ((await next()) !== String(i));
    ms.push(performance.now() - start);
  }
  proc.kill();
  await proc.exited;
  return ms;
}

// File watching: one wait at a time, committing a few ms after the waiter blocks.
const watched: number[] = [];
for (let i = 0; i < N; i++) watched.push(await oneWait(true, 2 + Math.random() * 10));

// Polling only: the commit lands at a random phase of the 1 s poll; lanes run side by side to keep the run short.
const polled: number[] = [];
let started = 0;
await Promise.all(
  Array.from({ length: LANES }, async () => {
    while (started++ < N) polled.push(await oneWait(false, Math.random() * 1000));
  }),
);
ledger.close();
const watch = stats(watched);
const floor = stats(await floorMs(N));

const result = {
  bench: "wake",
  watch,
  poll_only_1s: stats(polled),
  lanes_poll: LANES,
  floor,
  watch_p50_ratio: r2(watch.p50_ms / floor.p50_ms),
  watch_p95_ratio: r2(watch.p95_ms / floor.p95_ms),
};
console.log(`file watching  : p50 ${result.watch.p50_ms} ms  p95 ${result.watch.p95_ms} ms  max ${result.watch.max_ms} ms  (n=${result.watch.n})`);
console.log(`polling only 1s: p50 ${result.poll_only_1s.p50_ms} ms  p95 ${result.poll_only_1s.p95_ms} ms  max ${result.poll_only_1s.max_ms} ms  (n=${result.poll_only_1s.n}, ${LANES} lanes)`);
console.log(`floor (fs.watch echo): p50 ${result.floor.p50_ms} ms  p95 ${result.floor.p95_ms} ms  max ${result.floor.max_ms} ms  (n=${result.floor.n}; li wait = ${result.watch_p50_ratio}× at p50, ${result.watch_p95_ratio}× at p95)`);
console.log(`targets: p50 ≤ 2 ms, p95 ≤ 10 ms → ${result.watch.p50_ms <= 2 && result.watch.p95_ms <= 10 ? "met" : "NOT met"}`);
console.log(JSON.stringify(result));
rmSync(home, { recursive: true, force: true });
