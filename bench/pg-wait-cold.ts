// Benchmark `pg-wait-cold` (issue 11): `li wait` on an already-terminal id as a fresh process, the ledger on
// PostgreSQL over loopback (the test helper's throwaway cluster) against the same on SQLite, interleaved in
// the same run, medians; a compiled hello-world (bench/floor.ts) for scale, and a compiled program that
// only connects with Bun's SQL client and runs `SELECT 1` (the driver's floor: what any PostgreSQL
// command pays before li does anything). Target: PostgreSQL ≤ 1.4× that connect floor, measured in the
// same run (a server's fork and authentication per session is no cost of li's; the ratio to SQLite is
// printed beside it for scale).
// When pgbouncer is installed, also the same PostgreSQL ledger through a PgBouncer in session pooling in
// front of the cluster (test/helpers/pgbouncer.ts), configured as docs/postgres.md "Behind a connection
// pooler" says: ignore_startup_parameters and the database's search_path.
// Each ledger holds one session recorded by `li agent -- true` (the wait resolves its full id).
// Usage: bun bench/pg-wait-cold.ts [--runs 40] [--baseline OTHER_LI]   (build dist/li first; needs PostgreSQL's server programs)
// --baseline adds OTHER_LI (e.g. a build of an older commit) waiting on two ledgers it recorded itself.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { benchDatabase } from "./pg-database.ts";
import { SESSION_STARTUP_PARAMETERS } from "../src/ledger/postgres/startup-parameters.ts";
import { pgbouncerBinary, startPgBouncer } from "../test/helpers/pgbouncer.ts";
import { asSuperuser } from "../test/helpers/postgres.ts";
import { compileFloor, quantile, r2 } from "./floor.ts";

const at = process.argv.indexOf("--runs");
const RUNS = at >= 0 ? Number(process.argv[at + 1]) : 40;
const LI = join(import.meta.dir, "../dist/li");
const work = mkdtempSync(join(tmpdir(), "li-bench-pg-cold-"));
const hello = compileFloor(work, "hello", 'console.log("hello");\n');
const connectOnly = compileFloor(
  work,
  "pg-connect",
  'import { SQL } from "bun";\nconst sql = new SQL({ url: process.env.BENCH_PG_URL, max: 1 });\nawait sql`SELECT 1`;\nawait sql.close();\nconsole.log("connected");\n',
);

const db = await benchDatabase("bench_pg_wait_cold");

const baseEnv = (): Record<string, string> => {
  const env: Record<string, string> = { NO_COLOR: "1" };
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith("LI_")) env[k] = v;
  return env;
};

/** A ledger with one finished session; returns the env that names it and the session id. */
function recorded(name: string, extra: Record<string, string>, li = LI): { env: Record<string, string>; id: string } {
  const env = { ...baseEnv(), LI_HOME: join(work, name), ...extra };
  const made = Bun.spawnSync([li, "agent", "--json", "--", "true"], { env, stdout: "pipe", stderr: "pipe" });
  if (made.exitCode !== 0) throw new Error(`${name}: li agent failed: ${made.stderr.toString()}`);
  return { env, id: (JSON.parse(made.stdout.toString()) as { session_id: string }).session_id };
}

const sqlite = recorded("sqlite", {});
const pg = recorded("postgres", { LI_DB: db.url });
const socketUrl = `postgres://postgres@${encodeURIComponent(db.cluster.socketDir)}:${db.cluster.port}/${db.name}`;
const cases = [
  { name: "hello-world", argv: [hello], env: baseEnv(), check: "hello" },
  { name: "connect + SELECT 1 (Bun SQL)", argv: [connectOnly], env: { ...baseEnv(), BENCH_PG_URL: db.url }, check: "connected" },
  { name: "li wait, SQLite", argv: [LI, "wait", sqlite.id], env: sqlite.env, check: `${sqlite.id}\tstatus=completed` },
  { name: "li wait, PostgreSQL (loopback)", argv: [LI, "wait", pg.id], env: pg.env, check: `${pg.id}\tstatus=completed` },
  // The same ledger through the server's unix socket (a server on the same host): no TCP set-up.
  { name: "li wait, PostgreSQL (unix socket)", argv: [LI, "wait", pg.id], env: { ...pg.env, LI_DB: socketUrl }, check: `${pg.id}\tstatus=completed` },
];
const PGBOUNCER = "li wait, PostgreSQL through PgBouncer";
// li sends search_path at startup; a pooler that ignores it needs the server to set it (the docs' configuration).
const bouncer = pgbouncerBinary() ? await startPgBouncer({ ignoreStartupParameters: SESSION_STARTUP_PARAMETERS }) : null;
if (bouncer) {
  await asSuperuser((sql) => sql.unsafe(`ALTER DATABASE ${db.name} SET search_path = li`));
  cases.push({ name: PGBOUNCER, argv: [LI, "wait", pg.id], env: { ...pg.env, LI_DB: bouncer.url(db.name) }, check: `${pg.id}\tstatus=completed` });
} else {
  console.log("(pgbouncer is not installed: no PgBouncer case)");
}
const baselineAt = process.argv.indexOf("--baseline");
const baseline = baselineAt >= 0 ? process.argv[baselineAt + 1]! : null;
if (baseline) {
  // Ledgers of its own (an older li may not read a newer schema): another home, another PostgreSQL schema.
  const own = { sqlite: recorded("baseline-sqlite", {}, baseline), pg: recorded("baseline-postgres", { LI_DB: `${db.url}&search_path=li_baseline` }, baseline) };
  cases.push(
    { name: "baseline li wait, SQLite", argv: [baseline, "wait", own.sqlite.id], env: own.sqlite.env, check: `${own.sqlite.id}\tstatus=completed` },
    { name: "baseline li wait, PostgreSQL", argv: [baseline, "wait", own.pg.id], env: own.pg.env, check: `${own.pg.id}\tstatus=completed` },
  );
}
const times = new Map<string, number[]>(cases.map((c) => [c.name, []]));
for (let run = -3; run < RUNS; run++) {
  for (const c of cases) {
    const t0 = performance.now();
    const r = Bun.spawnSync(c.argv, { env: c.env, stdout: "pipe", stderr: "pipe" });
    const ms = performance.now() - t0;
    if (r.exitCode !== 0 || !r.stdout.toString().startsWith(c.check)) throw new Error(`${c.name}: exit ${r.exitCode}: ${r.stdout} ${r.stderr}`);
    if (run >= 0) times.get(c.name)!.push(ms); // the first rounds only warm caches
  }
}
await bouncer?.stop();
await db.dispose();
rmSync(work, { recursive: true, force: true });

const median = (name: string) => quantile(times.get(name)!, 0.5);
for (const c of cases) console.log(`${c.name.padEnd(38)} median ${median(c.name).toFixed(2)} ms, p95 ${quantile(times.get(c.name)!, 0.95).toFixed(2)} ms`);
const ratio = median("li wait, PostgreSQL (loopback)") / median("li wait, SQLite");
const overConnect = median("li wait, PostgreSQL (loopback)") / median("connect + SELECT 1 (Bun SQL)");
const socketRatio = median("li wait, PostgreSQL (unix socket)") / median("li wait, SQLite");
const bouncerRatio = bouncer ? median(PGBOUNCER) / median("li wait, SQLite") : null;
const throughBouncer = bouncerRatio === null ? "" : `; through PgBouncer ${bouncerRatio.toFixed(2)}×`;
/** The target: li's cold wait on PostgreSQL over the compiled connect + SELECT 1 of the same run. */
const CONNECT_FLOOR_TARGET = 1.4;
console.log(`PostgreSQL / connect floor = ${overConnect.toFixed(2)}× (target ≤ ${CONNECT_FLOOR_TARGET}×: ${overConnect <= CONNECT_FLOOR_TARGET ? "met" : "not met"})`);
console.log(`PostgreSQL / SQLite = ${ratio.toFixed(2)}×; over a unix socket ${socketRatio.toFixed(2)}×${throughBouncer}; SQLite / hello-world = ${(median("li wait, SQLite") / median("hello-world")).toFixed(2)}×`);
const baselineRatio = baseline ? median("baseline li wait, PostgreSQL") / median("baseline li wait, SQLite") : null;
if (baselineRatio !== null) console.log(`baseline: PostgreSQL / SQLite = ${baselineRatio.toFixed(2)}×`);
console.log(
  JSON.stringify({
    bench: "pg-wait-cold",
    runs: RUNS,
    median_ms: Object.fromEntries(cases.map((c) => [c.name, r2(median(c.name))])),
    pg_vs_sqlite: r2(ratio),
    pg_vs_connect_floor: r2(overConnect),
    pg_vs_connect_floor_target: CONNECT_FLOOR_TARGET,
    pg_vs_connect_floor_met: overConnect <= CONNECT_FLOOR_TARGET,
    pg_socket_vs_sqlite: r2(socketRatio),
    ...(bouncerRatio === null ? {} : { pg_pgbouncer_vs_sqlite: r2(bouncerRatio) }),
    ...(baselineRatio === null ? {} : { baseline_pg_vs_sqlite: r2(baselineRatio) }),
  }),
);
