// Benchmark `ui-list-scale`: li ui's run list (GET /api/ls, what the page fetches) on a ledger of
// 1,000,000 sessions against the same requests on one of 2,600 (the floor, measured in the same run: just over 50 pages):
// the first page, a status filter, a host filter, a text filter, and page 50 (reached by following the
// `after` cursor of 49 pages). Every session has a leg, on one of four hosts (one session in 100,000 on a
// fifth, rare host), with a command naming one of 1,000 targets; one in ten failed. Two worst cases are
// printed too, without a ratio: a host almost no session ran on (sought in the session row's copy of its
// current leg's host since migration 0012/0017; before it, a walk of every row) and a text no session holds
// (a text is found by walking the index newest first until the page is full: that one walks every row).
// Usage: bun bench/ui-list-scale.ts [--rows 1000000] [--runs 9] [--backend sqlite|postgres]
// (build dist/li first; the PostgreSQL run starts the tests' throwaway cluster)

import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Database } from "bun:sqlite";
import { SQL } from "bun";
import { openLedger } from "../src/ledger/open.ts";
import { resolvePaths } from "../src/ledger/location.ts";
import { quantile, r2 } from "./floor.ts";

const arg = (name: string, fallback: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1]! : fallback;
};
const ROWS = Number(arg("rows", "1000000"));
const RUNS = Number(arg("runs", "9"));
const BACKEND = arg("backend", "sqlite");
// Just over 50 pages of 50: the smallest ledger page 50 exists in.
const SMALL = 2600;
const LI = join(import.meta.dir, "../dist/li");
const work = mkdtempSync(join(tmpdir(), "li-bench-ui-list-"));

/**
 * The rows, as one INSERT … SELECT per table over the numbers 1..n (SQLite: a recursive CTE; PostgreSQL:
 * generate_series): session i updated at now - (n - i) seconds, so the newest is n.
 */
function fillStatements(n: number, now: number, numbers: string, hex: (i: string) => string): string[] {
  const id = (i: string) => hex(i);
  const failed = (i: string) => `(${i}) % 10 = 0`;
  const host = (i: string) => `CASE WHEN (${i}) % 100000 = 7 THEN 'rare' ELSE 'host-' || ((${i}) % 4) END`;
  return [
    // The session row's copy of its leg's host (name, machine part of the id), as li writes it with current_leg_id.
    `INSERT INTO sessions (id, status, status_reason_code, created_at, updated_at, started_at, ended_at, exit_code, current_leg_id, host_name, host_machine)
     SELECT ${id("i")}, CASE WHEN ${failed("i")} THEN 'failed' ELSE 'completed' END, CASE WHEN ${failed("i")} THEN 'run.failed.exit_nonzero' ELSE 'run.completed.ok' END,
       ${now} - (${n} - i) - 5, ${now} - (${n} - i), ${now} - (${n} - i) - 5, ${now} - (${n} - i), CASE WHEN ${failed("i")} THEN 2 ELSE 0 END, 'leg-' || ${id("i")}, ${host("i")}, ${host("i")}
     FROM ${numbers}`,
    `INSERT INTO legs (id, session_id, seq, run_id, state_root, artifact_root, command, host_id, host_name, started_at, ended_at, status, reason_code, exit_code)
     SELECT 'leg-' || ${id("i")}, ${id("i")}, 1, 'run-' || ${id("i")}, '/runs/' || ${id("i")}, '', '["make","target-' || ((i) % 1000) || '"]',
       ${host("i")} || ':boot-1', ${host("i")}, ${now} - (${n} - i) - 5, ${now} - (${n} - i),
       CASE WHEN ${failed("i")} THEN 'failed' ELSE 'completed' END, CASE WHEN ${failed("i")} THEN 'run.failed.exit_nonzero' ELSE 'run.completed.ok' END, CASE WHEN ${failed("i")} THEN 2 ELSE 0 END
     FROM ${numbers}`,
  ];
}

interface Served {
  url: string;
  proc: Bun.Subprocess<"ignore", "pipe", "pipe">;
}

async function serve(env: Record<string, string>): Promise<Served> {
  const proc = Bun.spawn([LI, "ui", "--listen", "127.0.0.1:0"], { env: { ...process.env, ...env }, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const reader = proc.stdout.getReader();
  let out = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`li ui exited: ${await new Response(proc.stderr).text()}`);
    out += new TextDecoder().decode(value);
    const m = /li ui: (http:\S+)/.exec(out);
    if (m) return { url: m[1]!, proc };
  }
}

/** A ledger of `n` sessions for li ui; the environment that names it. */
async function ledger(name: string, n: number): Promise<{ env: Record<string, string>; url?: string; dispose: () => Promise<void> }> {
  const home = join(work, name);
  const now = Date.now() / 1000;
  const started = performance.now();
  if (BACKEND === "postgres") {
    const { benchDatabase } = await import("./pg-database.ts");
    const db = await benchDatabase(`li_bench_ui_${name}`);
    const env = { LI_HOME: home, LI_DB: db.url };
    const migrate = Bun.spawnSync([LI, "state", "migrate"], { env: { ...process.env, ...env } });
    if (migrate.exitCode !== 0) throw new Error(`li state migrate: ${migrate.stderr.toString()}`);
    const sql = new SQL(db.url);
    await sql.unsafe("SET search_path TO li"); // li's default schema
    for (const statement of fillStatements(n, now, `generate_series(1, ${n}) AS g(i)`, (i) => `md5((${i})::text)`)) await sql.unsafe(statement);
    await sql.unsafe("ANALYZE sessions, legs");
    await sql.close();
    console.log(`${name}: ${n} sessions with their legs in ${((performance.now() - started) / 1000).toFixed(1)} s (PostgreSQL)`);
    return { env, url: db.url, dispose: () => db.dispose() };
  }
  openLedger(resolvePaths({ env: { LI_HOME: home } }), { create: true }).close(); // migrations applied
  const db = new Database(join(home, "state.db"));
  db.run("PRAGMA synchronous = OFF");
  db.run("BEGIN");
  for (const statement of fillStatements(n, now, `(WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < ${n}) SELECT i FROM c)`, (i) => `printf('%08x-0000-4000-8000-%012x', ${i}, ${i} * 7919)`)) db.run(statement);
  db.run("COMMIT");
  db.close();
  console.log(`${name}: ${n} sessions with their legs in ${((performance.now() - started) / 1000).toFixed(1)} s (SQLite)`);
  return { env: { LI_HOME: home }, dispose: async () => {} };
}

type Entity = { id: string; updated_at: number };

async function list(url: string, query: string): Promise<Entity[]> {
  const r = await fetch(`${url}api/ls?${query}`);
  if (!r.ok) throw new Error(`GET /api/ls?${query}: ${r.status} ${await r.text()}`);
  return ((await r.json()) as { entities: Entity[] }).entities;
}

/** The query string of page 50: the cursor after 49 pages of 50, followed as the page's "older" does. */
async function page50(url: string): Promise<string> {
  let after = "";
  for (let page = 1; page < 50; page++) {
    const rows = await list(url, `limit=50${after}`);
    const last = rows.at(-1)!;
    after = `&after=${last.updated_at}:${last.id}`;
  }
  return `limit=50${after}`;
}

/** Median ms of `runs` GETs of one query (after two warm-ups), checking each returned `expect` rows. */
async function time(url: string, query: string, expect: number, runs = RUNS): Promise<number> {
  const ms: number[] = [];
  for (let i = -2; i < runs; i++) {
    const t0 = performance.now();
    const rows = await list(url, query);
    if (i >= 0) ms.push(performance.now() - t0);
    if (rows.length !== expect) throw new Error(`${query}: ${rows.length} rows, expected ${expect}`);
  }
  return quantile(ms, 0.5);
}

const load = () => (require("node:os") as typeof import("node:os")).loadavg().map((x) => x.toFixed(2)).join(" ");
console.log(`load average before: ${load()}`);
const small = await ledger("small", SMALL);
const big = await ledger("big", ROWS);
const servers = { small: await serve(small.env), big: await serve(big.env) };
const cases: [string, (url: string) => Promise<string>][] = [
  ["first page", async () => "limit=50"],
  ["status=failed", async () => "limit=50&status=failed"],
  ["host=host-1", async () => "limit=50&host=host-1"],
  ["text target-7", async () => "limit=50&q=target-7"],
  ["page 50", page50],
];
const results: Record<string, { small: number; big: number; ratio: number }> = {};
for (const [name, query] of cases) {
  const q = { small: await query(servers.small.url), big: await query(servers.big.url) };
  const s = await time(servers.small.url, q.small, 50);
  const b = await time(servers.big.url, q.big, 50);
  results[name] = { small: r2(s), big: r2(b), ratio: r2(b / s) };
  console.log(`${name.padEnd(14)} ${SMALL} sessions ${s.toFixed(1)} ms   ${ROWS} sessions ${b.toFixed(1)} ms   ${(b / s).toFixed(2)}× the floor`);
}
// The worst cases: rows almost none match, so the walk reads the whole index (no ratio: the floor holds no such rows).
const rare = Math.floor((ROWS - 7) / 100000) + 1;
const worst = {
  rare_host_ms: r2(await time(servers.big.url, "limit=50&host=rare", Math.min(50, rare), 3)),
  absent_text_ms: r2(await time(servers.big.url, "limit=50&q=no-such-text", 0, 3)),
};
console.log(`worst cases on ${ROWS}: host=rare (${Math.min(50, rare)} rows) ${worst.rare_host_ms} ms   a text no row holds ${worst.absent_text_ms} ms`);
console.log(`load average after: ${load()}`);
if (process.argv.includes("--explain") && big.url) {
  // PostgreSQL's plan of each case's session statement, as li ui runs it (EXPLAIN ANALYZE).
  const { recentStatement } = await import("../src/ledger/rules/views.ts");
  const { PG_VIEWS } = await import("../src/ledger/postgres/dialect.ts");
  const sql = new SQL(big.url);
  await sql.unsafe("SET search_path TO li");
  for (const [name, filter] of [["first page", {}], ["status=failed", { status: "failed" }], ["host=host-1", { host: "host-1" }], ["text target-7", { text: "target-7" }], ["after", { after: { updatedAt: 1, id: "x" } }]] as const) {
    const st = recentStatement(PG_VIEWS, "session", { kinds: ["session"], limit: 50, ...filter } as never);
    const plan = (await sql.unsafe(`EXPLAIN ANALYZE ${st.sql}`, st.params as never[])) as { "QUERY PLAN": string }[];
    console.log(`-- ${name}\n${plan.map((r) => r["QUERY PLAN"]).join("\n")}`);
  }
  const { neighboursStatement } = await import("../src/ledger/rules/views.ts");
  const [one] = (await sql.unsafe("SELECT id FROM sessions ORDER BY updated_at DESC LIMIT 1")) as { id: string }[];
  const nb = neighboursStatement(PG_VIEWS, one!.id);
  const plan = (await sql.unsafe(`EXPLAIN ANALYZE ${nb.sql}`, nb.params as never[])) as { "QUERY PLAN": string }[];
  console.log(`-- the shortest unique prefix of one id\n${plan.map((r) => r["QUERY PLAN"]).join("\n")}`);
  await sql.close();
}
console.log(JSON.stringify({ bench: "ui-list-scale", backend: BACKEND, runs: RUNS, rows: ROWS, small_rows: SMALL, cases: results, worst }));
for (const s of [servers.small, servers.big]) {
  s.proc.kill("SIGTERM");
  await s.proc.exited;
}
await small.dispose();
await big.dispose();
process.exit(0);
