// Benchmark `pg-wake`: on a PostgreSQL ledger, commit of a terminal status → `li wait`'s result line read
// from its stdout, p50/p95/max, with `--interval 1h` so only LISTEN/NOTIFY can wake it; against the floor
// of a bare `sql.listen` process echoing a committed NOTIFY as a line (bench/workers/listen-echo.ts), in
// the same run on the same server. Usage: bun bench/pg-wake.ts [--n 200]   (build dist/li first; needs
// PostgreSQL's server programs, as the tests do: a throwaway cluster on loopback is started and stopped)

import { SQL } from "bun";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { openLedger } from "../src/ledger/open.ts";
import { resolvePaths } from "../src/ledger/location.ts";
import { benchDatabase } from "./pg-database.ts";
import { lineReader } from "../test/helpers/lines.ts";
import { quantile, r2, r3, timedWake } from "./floor.ts";

const { values } = parseArgs({ options: { n: { type: "string", default: "200" } } });
const N = Number(values.n);
const LI = join(import.meta.dir, "../dist/li");

const db = await benchDatabase("bench_wake");
const url = db.url;
const env = { ...process.env, LI_DB: url, NO_COLOR: "1" };
const ledger = openLedger(resolvePaths({ env: { LI_DB: url, LI_HOME: "/nonexistent-li-home" } }), { create: true });

const stats = (ms: number[]) => ({ n: ms.length, p50_ms: r3(quantile(ms, 0.5)), p95_ms: r3(quantile(ms, 0.95)), max_ms: r3(Math.max(...ms)) });

try {
  await ledger.createEntity("invocation", { id: "sentinel", status: "running" });
  await ledger.updateStatus("invocation", "sentinel", { newStatus: "completed", reasonCode: "run.completed.ok" });

  let counter = 0;
  /** One wait (--interval 1h: only LISTEN/NOTIFY can wake it); then commit and time the line. */
  const oneWait = (delayMs: number) => timedWake(ledger, [LI, "wait", "--interval", "1h"], env, "sentinel", `target-${++counter}`, delayMs);

  /** The floor, `n` times: a committed pg_notify → the echo process's line. */
  async function floorMs(n: number): Promise<number[]> {
    const proc = Bun.spawn([process.execPath, join(import.meta.dir, "workers/listen-echo.ts"), url, "bench_floor"], { stdout: "pipe", stderr: "inherit" });
    const next = lineReader(proc.stdout);
    if ((await next()) !== "ready") throw new Error("the echo process did not start");
    const sql = new SQL({ url, max: 1 });
    const ms: number[] = [];
    for (let i = 1; i <= n; i++) {
      await Bun.sleep(2 + Math.random() * 10);
      await sql`SELECT pg_notify('bench_floor', ${String(i)})`;
      const sent = performance.now();
      while ((await next()) !== String(i));
      ms.push(performance.now() - sent);
    }
    await sql.close();
    proc.kill();
    await proc.exited;
    return ms;
  }

  // Interleaved in rounds so both see the same machine load.
  const waits: number[] = [];
  const floors: number[] = [];
  const ROUNDS = 10;
  for (let round = 0; round < ROUNDS; round++) {
    for (let i = 0; i < Math.ceil(N / ROUNDS); i++) waits.push(await oneWait(2 + Math.random() * 10));
    floors.push(...(await floorMs(Math.ceil(N / ROUNDS))));
  }
  const wait = stats(waits);
  const floor = stats(floors);
  const result = { bench: "pg-wake", wait, floor, p50_ratio: r2(wait.p50_ms / floor.p50_ms), p95_ratio: r2(wait.p95_ms / floor.p95_ms) };
  console.log(`li wait (LISTEN, --interval 1h): p50 ${wait.p50_ms} ms  p95 ${wait.p95_ms} ms  max ${wait.max_ms} ms  (n=${wait.n})`);
  console.log(`floor (sql.listen echo)        : p50 ${floor.p50_ms} ms  p95 ${floor.p95_ms} ms  max ${floor.max_ms} ms  (n=${floor.n}; li wait = ${result.p50_ratio}× at p50, ${result.p95_ratio}× at p95)`);
  console.log(`target: p50 ≤ 5 ms → ${wait.p50_ms <= 5 ? "met" : "NOT met"}`);
  console.log(JSON.stringify(result));
} finally {
  ledger.close();
  await db.dispose();
}
