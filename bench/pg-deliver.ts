// Benchmark `pg-deliver` (issue 11): delivery with three watchers on one PostgreSQL ledger. Three
// `dist/li watch` processes, each with its own host identity (LI_HOST_ID), share the ledger; each host has
// one standing handler (`sh -c 'date +%s%N >> FILE'`) for one kind of entity. One event at a time, rotating
// over the three kinds, the bench applies a terminal transition **without pushing** (only that host's
// watcher can run the handler) and waits for the handler's line: owed event committed → handler started,
// p50/p95 per watcher and over all; the floor is the bench starting the same handler itself, same run.
// Usage: bun run build && bun bench/pg-deliver.ts [N=300]   (needs PostgreSQL's server programs, as the tests do)

import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { resolvePaths } from "../src/ledger/location.ts";
import { openLedger } from "../src/ledger/open.ts";
import { addHandler } from "../src/notify/consumers.ts";
import { benchDatabase } from "./pg-database.ts";
import { againstHandlerFloor, handlerSpawnFloorMs, quantile, r2, wallNs } from "./floor.ts";

const N = Number(process.argv[2] ?? 300);
const LI = resolve(import.meta.dir, "../dist/li");
if (!existsSync(LI)) throw new Error(`build the binary first: ${LI} is missing`);
const HOSTS = [
  { id: "bench-a", kind: "session", reason: "run.completed.ok", status: "completed" },
  { id: "bench-b", kind: "invocation", reason: "run.completed.ok", status: "completed" },
  { id: "bench-c", kind: "schedule_run", reason: "run.cancelled.operator", status: "cancelled" },
] as const;

const db = await benchDatabase("bench_pg_deliver");
const url = db.url;
const home = mkdtempSync(join(tmpdir(), "li-bench-pg-deliver-"));
const marksOf = (host: string) => join(home, `started-${host}`);
const ledger = openLedger(resolvePaths({ env: { LI_HOME: home, LI_DB: url } }), { create: true });
for (const host of HOSTS) {
  await addHandler(ledger, { name: `mark-${host.id}`, kinds: [host.kind], ids: [], argv: ["/bin/sh", "-c", 'date +%s%N >> "$0"', marksOf(host.id)], hostId: host.id });
}

const baseEnv: Record<string, string> = {};
for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith("LI_")) baseEnv[k] = v;
const watchers = HOSTS.map((host) =>
  Bun.spawn([LI, "watch", "--sweep-interval", "1h"], {
    env: { ...baseEnv, LI_HOME: join(home, host.id), LI_DB: url, LI_HOST_ID: host.id, LI_HOST_NAME: host.id },
    stdin: "ignore",
    stdout: "ignore",
    stderr: "inherit",
  }),
);
await Bun.sleep(1000); // let them connect, take their locks and LISTEN

const lineCount = (host: string) => (existsSync(marksOf(host)) ? readFileSync(marksOf(host), "utf8").split("\n").length - 1 : 0);
const commits = new Map<string, bigint[]>(HOSTS.map((h) => [h.id, []]));
for (let i = 0; i < N; i++) {
  const host = HOSTS[i % HOSTS.length]!;
  const id = `${host.kind}-${i}`;
  const before = lineCount(host.id);
  await ledger.createEntity(host.kind, { id });
  // The push is "lost": the committing process never runs the handler; only that host's watcher can.
  await ledger.transition(host.kind, id, { newStatus: host.status, reasonCode: host.reason });
  commits.get(host.id)!.push(wallNs());
  const deadline = Date.now() + 10_000;
  while (lineCount(host.id) < before + 1) {
    if (Date.now() > deadline) throw new Error(`event ${i}: ${host.id}'s watcher did not start the handler within 10 s`);
    await Bun.sleep(1);
  }
}
for (const w of watchers) w.kill("SIGTERM");
const codes = await Promise.all(watchers.map((w) => w.exited));
ledger.close();

const all: number[] = [];
const perHost: Record<string, { n: number; p50_ms: number; p95_ms: number }> = {};
for (const host of HOSTS) {
  const started = readFileSync(marksOf(host.id), "utf8").trim().split("\n").map((l) => BigInt(l));
  const ms = started.map((s, i) => Number(s - commits.get(host.id)![i]!) / 1e6);
  all.push(...ms);
  perHost[host.id] = { n: ms.length, p50_ms: r2(quantile(ms, 0.5)), p95_ms: r2(quantile(ms, 0.95)) };
}
// Measured once the watchers have stopped, so they never compete with it for the machine.
const floor = await handlerSpawnFloorMs(join(home, "floor"), Math.min(N, 200));
await db.dispose();

const against = againstHandlerFloor(all, floor);
console.log(`pg-deliver: three watchers (one per host) on PostgreSQL, commit with no push → handler started, ${N} events: ${against.latency} (watcher exits ${codes.join(",")})`);
for (const [host, f] of Object.entries(perHost)) console.log(`  ${host}: ${f.n} events, p50 ${f.p50_ms} ms, p95 ${f.p95_ms} ms`);
console.log(`pg-deliver: floor, the bench starting the same handler itself: ${against.floor}`);
console.log(JSON.stringify({ bench: "pg-deliver", n: N, ...against.figures, per_host: perHost, watcher_exits: codes }));
