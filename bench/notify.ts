// Benchmark `notify` (SPEC §9.4): commit of a terminal status → handler started, p50/p95 over N events on the
// push path; and what a leg registration adds to a leg (setup transaction, and the push at teardown). Each figure
// has a floor from the same run: the bench starting the handler itself, a leg without a registration.
// Usage: bun bench/notify.ts [N=500]

import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openLedger } from "../src/ledger/open.ts";
import { resolvePaths } from "../src/ledger/location.ts";
import type { Ledger } from "../src/ledger/ledger.ts";
import { addHandler } from "../src/notify/consumers.ts";
import { handlerHost } from "../src/notify/host.ts";
import { pushTerminal } from "../src/notify/push.ts";
import { registerLegCallback } from "../src/notify/register.ts";
import { handlerSpawnFloorMs, quantile, r2, r3, wallNs } from "./floor.ts";

const N = Number(process.argv[2] ?? 500);
const root = mkdtempSync(join(tmpdir(), "li-bench-notify-"));
const host = handlerHost();

function open(name: string): { ledger: Ledger; home: string } {
  const home = join(root, name);
  return { ledger: openLedger(resolvePaths({ env: { LI_HOME: home } }), { create: true }), home };
}

const fmt = (ms: number) => `${ms.toFixed(2)} ms`;

/** Commit → the handler's first command ran, over N events, each pushed by the process that committed it. */
async function commitToHandler(): Promise<{ p50: number; p95: number }> {
  const { ledger, home } = open("latency");
  const marks = join(home, "started");
  // The handler's first act is to write the wall clock (ns): what it measures includes exec of sh and date.
  await addHandler(ledger, { name: "mark", kinds: ["invocation"], ids: [], argv: ["/bin/sh", "-c", 'date +%s%N >> "$0"', marks], hostId: host });
  const commits: bigint[] = [];
  for (let i = 0; i < N; i++) {
    await ledger.createEntity("invocation", { id: `inv-${i}` });
    const outcome = await ledger.transition("invocation", `inv-${i}`, { newStatus: "completed", reasonCode: "run.completed.ok" });
    commits.push(wallNs());
    if (outcome.result === "applied") await pushTerminal(ledger, outcome.transition, { hostId: host, liHome: home });
  }
  ledger.close();
  const started = readFileSync(marks, "utf8").trim().split("\n").map((l) => BigInt(l));
  if (started.length !== N) throw new Error(`expected ${N} handler runs, saw ${started.length}`);
  const ms = started.map((s, i) => Number(s - commits[i]!) / 1e6);
  return { p50: quantile(ms, 0.5), p95: quantile(ms, 0.95) };
}

/** One leg's setup transaction (session, history, leg row) with or without its registration. */
async function setupCost(withRegistration: boolean): Promise<number> {
  const { ledger } = open(withRegistration ? "setup-reg" : "setup-plain");
  const legs = 2000;
  const start = performance.now();
  for (let i = 0; i < legs; i++) {
    const prepared = ledger.prepareCreate("session", { id: `s-${i}` });
    await ledger.transact(async (tx) => {
      await ledger.insertNew(tx, "session", prepared);
      if (withRegistration) await registerLegCallback(tx, { sessionId: `s-${i}`, legId: `leg-${i}`, argv: ["true"], origin: "--notify", hostId: host, now: ledger.now() });
    });
  }
  const perLeg = (performance.now() - start) / legs;
  ledger.close();
  return perLeg;
}

/** The teardown's push: with no registration (the owed query finds nothing) and with one (a `true` handler runs). */
async function teardownCost(withRegistration: boolean): Promise<number> {
  const { ledger, home } = open(withRegistration ? "teardown-reg" : "teardown-plain");
  const legs = 200;
  let total = 0;
  for (let i = 0; i < legs; i++) {
    await ledger.createEntity("session", { id: `s-${i}`, fields: { current_leg_id: `leg-${i}` } });
    if (withRegistration) {
      await ledger.transact((tx) => registerLegCallback(tx, { sessionId: `s-${i}`, legId: `leg-${i}`, argv: ["/bin/true"], origin: "--notify", hostId: host, now: ledger.now() }));
    }
    const outcome = await ledger.transition("session", `s-${i}`, { newStatus: "completed", reasonCode: "run.completed.ok" });
    const start = performance.now();
    if (outcome.result === "applied") await pushTerminal(ledger, outcome.transition, { hostId: host, liHome: home });
    total += performance.now() - start;
  }
  ledger.close();
  return total / legs;
}

/**
 * A whole `li agent -- true` through dist/li (process start to exit), without and with `--notify /bin/true`,
 * interleaved so machine load falls on both alike: median ms of each.
 */
async function wholeLeg(): Promise<{ plain: number; notify: number } | null> {
  const binary = join(import.meta.dir, "../dist/li");
  if (!existsSync(binary)) return null;
  const env = { ...process.env, LI_HOME: join(root, "legs"), NO_COLOR: "1" };
  const runs = 40;
  const times = { plain: [] as number[], notify: [] as number[] };
  for (let i = 0; i < runs + 3; i++) {
    for (const variant of ["plain", "notify"] as const) {
      const start = performance.now();
      const proc = Bun.spawn([binary, "agent", ...(variant === "notify" ? ["--notify", "/bin/true {status}"] : []), "--", "true"], { env, stdout: "ignore", stderr: "ignore" });
      if ((await proc.exited) !== 0) throw new Error("li agent failed");
      if (i >= 3) times[variant].push(performance.now() - start); // the first runs create the ledger and warm the caches
    }
  }
  return { plain: quantile(times.plain, 0.5), notify: quantile(times.notify, 0.5) };
}

const latency = await commitToHandler();
const spawnFloor = await handlerSpawnFloorMs(join(root, "floor"), N);
const floor = { p50: quantile(spawnFloor, 0.5), p95: quantile(spawnFloor, 0.95) };
const setupPlain = await setupCost(false);
const setupReg = await setupCost(true);
const pushPlain = await teardownCost(false);
const pushReg = await teardownCost(true);

console.log(`notify: commit → handler started over ${N} events (push path): p50 ${fmt(latency.p50)}, p95 ${fmt(latency.p95)} (${(latency.p50 / floor.p50).toFixed(2)}× the floor)`);
console.log(`notify: floor, the bench starting the same handler itself, ${N} times: p50 ${fmt(floor.p50)}, p95 ${fmt(floor.p95)}`);
console.log(`notify: leg setup transaction ${fmt(setupPlain)} without a registration, ${fmt(setupReg)} with one (+${fmt(setupReg - setupPlain)}, ×${(setupReg / setupPlain).toFixed(2)})`);
console.log(`notify: teardown push ${fmt(pushPlain)} with no handler (the owed query), ${fmt(pushReg)} with one registration (claim, run /bin/true, acknowledge)`);
const leg = await wholeLeg();
if (leg !== null) {
  console.log(`notify: a whole leg (dist/li agent -- true) median ${fmt(leg.plain)} without --notify, ${fmt(leg.notify)} with --notify "/bin/true {status}" (+${fmt(leg.notify - leg.plain)}: registration, push, handler run)`);
}
console.log(
  JSON.stringify({
    bench: "notify",
    n: N,
    push_p50_ms: r2(latency.p50),
    push_p95_ms: r2(latency.p95),
    spawn_floor_p50_ms: r2(floor.p50),
    spawn_floor_p95_ms: r2(floor.p95),
    push_p50_ratio: r2(latency.p50 / floor.p50),
    setup_plain_ms: r3(setupPlain),
    setup_registered_ms: r3(setupReg),
    setup_ratio: r2(setupReg / setupPlain),
    teardown_push_plain_ms: r3(pushPlain),
    teardown_push_registered_ms: r3(pushReg),
    teardown_push_ratio: r2(pushReg / pushPlain),
    ...(leg !== null ? { leg_plain_ms: r2(leg.plain), leg_notify_ms: r2(leg.notify), leg_ratio: r2(leg.notify / leg.plain) } : {}),
  }),
);
