// Benchmark `pg-connection-budget` (SPEC §20): N legs of `sleep S` started at once on one host with a
// watcher, against a PostgreSQL role limited to 97 connections (what a stock server, max_connections =
// 100 with 3 kept for superusers, leaves li). Prints whether every leg started and was recorded, the peak
// of the role's connections (sampled from pg_stat_activity all along) against the bound (the watcher's 3 +
// the host's connection slots, LI_PG_SLOTS), the peak while the legs ran, the
// wall time, and its ratio to the floor: the same N bare `sleep S` processes started at once, same run.
// Usage: bun bench/pg-connection-budget.ts [--legs 500] [--seconds 5]   (build dist/li first)

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { asSuperuser } from "../test/helpers/postgres.ts";
import { collectLines } from "../test/helpers/lines.ts";
import { benchDatabase } from "./pg-database.ts";
import { r2 } from "./floor.ts";
import { slotCount } from "../src/ledger/postgres/slots.ts";

const { values } = parseArgs({ options: { legs: { type: "string", default: "500" }, seconds: { type: "string", default: "5" } } });
const N = Number(values.legs);
const SECONDS = values.seconds!;
const LI = join(import.meta.dir, "../dist/li");
const STOCK_LIMIT = 97;

const db = await benchDatabase("bench_budget");
const role = "bench_budget_li";
const home = mkdtempSync(join(tmpdir(), "li-bench-budget-"));
try {
  await asSuperuser(async (sql) => {
    await sql.unsafe(`DROP ROLE IF EXISTS ${role}`);
    await sql.unsafe(`CREATE ROLE ${role} LOGIN CONNECTION LIMIT ${STOCK_LIMIT}`);
    await sql.unsafe(`GRANT ALL ON DATABASE ${db.name} TO ${role}`);
  });
  const env = { ...process.env, LI_HOME: home, LI_DB: db.url.replace("postgres@", `${role}@`), NO_COLOR: "1" };
  const connections = () => asSuperuser(async (sql) => (await sql`SELECT count(*)::int AS n FROM pg_stat_activity WHERE usename = ${role}`)[0].n as number);

  // The floor: N bare sleeps started at once.
  const floorStart = performance.now();
  await Promise.all(Array.from({ length: N }, () => Bun.spawn(["sleep", SECONDS]).exited));
  const floorMs = performance.now() - floorStart;

  if ((await Bun.spawn([LI, "agent", "--", "true"], { env, stdout: "ignore", stderr: "inherit" }).exited) !== 0) throw new Error("the first leg failed");
  const watcher = Bun.spawn([LI, "watch"], { env, stdout: "pipe", stderr: "inherit" });
  const out = collectLines(watcher.stdout);
  while (!out.lines.some((l) => l.includes(" start "))) await Bun.sleep(20);

  let peak = 0;
  let peakRunning = 0;
  let running = 0;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      const n = await connections();
      peak = Math.max(peak, n);
      const [row] = await asSuperuser((sql) => sql`SELECT count(*)::int AS n FROM li.legs WHERE ended_at IS NULL AND command_pid IS NOT NULL`, db.name).catch(() => [{ n: 0 }]);
      running = row.n as number;
      // Once every leg runs, the connections held are the steady state the budget is about.
      if (running === N) peakRunning = Math.max(peakRunning, n);
      await Bun.sleep(25);
    }
  })();
  const started = performance.now();
  const codes = await Promise.all(Array.from({ length: N }, () => Bun.spawn([LI, "agent", "--", "sleep", SECONDS], { env, stdout: "ignore", stderr: "ignore" }).exited));
  const wallMs = performance.now() - started;
  sampling = false;
  await sampler;
  watcher.kill("SIGTERM");
  await watcher.exited;
  const [recorded] = await asSuperuser((sql) => sql`SELECT count(*)::int AS n FROM li.sessions WHERE status = 'completed'`, db.name);

  console.log(
    JSON.stringify({
      bench: "pg-connection-budget",
      legs: N,
      seconds: Number(SECONDS),
      role_connection_limit: STOCK_LIMIT,
      slots: slotCount(),
      bound: 3 + slotCount(),
      exit_0: codes.filter((c) => c === 0).length,
      recorded_completed: (recorded.n as number) - 1,
      peak_connections: peak,
      peak_connections_all_running: peakRunning,
      wall_ms: Math.round(wallMs),
      floor_ms: Math.round(floorMs),
      ratio_to_floor: r2(wallMs / floorMs),
    }),
  );
} finally {
  rmSync(home, { recursive: true, force: true });
  // The role goes with the throwaway cluster, which dispose() stops.
  await db.dispose();
}
