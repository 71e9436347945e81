// Benchmark `fleet` (SPEC §14 "Many hosts", issue 29): W watchers on one PostgreSQL server, each its own
// host (its own LI_HOME and LI_HOST_ID), and L `li agent -- true` legs from one more host, one after another.
// For each W it prints: the server's connections to the ledger's database with every watcher idle; the idle
// transactions per second (pg_stat_database: xact_commit + xact_rollback) and statements per second
// (pg_stat_statements' calls); per leg, net of the idle rates over the legs' window: server transactions,
// statements and the watchers' CPU (utime + stime of every watcher from /proc); the legs' wall time p50
// (spawn to exit); and `li wait`'s return after a leg's end (a detached `sleep 1` leg, li wait started
// while it runs: the wait's exit on this machine's clock minus the session's ended_at, the server's clock
// on the same machine), p50 and range. The ratios against W = 1 (the floor, measured in the same run) end
// the output. The throwaway cluster is the tests' (fsync off), with pg_stat_statements preloaded.
// Usage: bun bench/fleet.ts [--watchers 1,10,50,100] [--legs 100] [--waits 10] [--idle SECONDS] [--poll D]
//   (build dist/li first; --poll passes the watchers' safety poll, default li's own; the idle window is two
//   polls, 10 to 60 s; --poll 1h leaves only what the legs cause in the per-leg figures; W = 100 needs
//   LI_TEST_PG_MAX_CONNECTIONS above 3 per watcher, e.g. 500)

import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import type { Subprocess } from "bun";
import { asSuperuser, postgresCluster, stopPostgresCluster } from "../test/helpers/postgres.ts";
import { collectLines } from "../test/helpers/lines.ts";
import { quantile, r2 } from "./floor.ts";

const { values } = parseArgs({
  options: {
    watchers: { type: "string", default: "1,10,50,100" },
    legs: { type: "string", default: "100" },
    waits: { type: "string", default: "10" },
    idle: { type: "string" },
    poll: { type: "string" },
  },
});
const WATCHER_COUNTS = values.watchers!.split(",").map(Number);
const LEGS = Number(values.legs);
const WAITS = Number(values.waits);
/** The watchers' poll in seconds, when given (30s, 1h, 500ms…). */
const POLL_SECONDS = values.poll ? durationSeconds(values.poll) : 30; // li watch's default (30 s while its LISTEN holds)
// The idle window holds two polls (at most a minute's worth), so the idle rate subtracted from the legs' window counts their passes.
const IDLE_SECONDS = values.idle ? Number(values.idle) : Math.max(10, Math.min(2 * POLL_SECONDS, 60));

function durationSeconds(text: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text);
  if (!m) throw new Error(`--poll: not a duration: ${text}`);
  const n = Number(m[1]);
  return m[2] === "ms" ? n / 1000 : m[2] === "m" ? n * 60 : m[2] === "h" ? n * 3600 : n;
}
const LI = join(import.meta.dir, "../dist/li");
const TICK_MS = 1000 / 100; // USER_HZ

/** utime + stime of `pid`, in ms (0 once it is gone). */
function cpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
  } catch {
    return 0;
  }
}

interface Counters {
  at: number;
  xacts: number;
  statements: number;
  cpu: number;
}

async function counters(db: string, watchers: readonly Subprocess[]): Promise<Counters> {
  // Backends publish their statistics when idle, at most once a second: let the last ones land.
  await Bun.sleep(1200);
  const [row] = await asSuperuser(
    (sql) => sql`SELECT (SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database())::bigint AS xacts,
                        (SELECT COALESCE(sum(calls), 0) FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()))::bigint AS statements`,
    db,
  );
  return { at: performance.now(), xacts: Number(row.xacts), statements: Number(row.statements), cpu: watchers.reduce((sum, w) => sum + cpuMs(w.pid), 0) };
}

const rate = (a: Counters, b: Counters, key: "xacts" | "statements" | "cpu") => (b[key] - a[key]) / ((b.at - a.at) / 1000);

interface Row {
  watchers: number;
  connections: number;
  idle_xacts_per_s: number;
  idle_statements_per_s: number;
  idle_watcher_cpu_ms_per_s: number;
  per_leg_xacts: number;
  per_leg_statements: number;
  per_leg_watcher_cpu_ms: number;
  leg_p50_ms: number;
  wait_after_end_p50_ms: number;
  wait_after_end_min_ms: number;
  wait_after_end_max_ms: number;
  load: number[];
}

async function measure(w: number): Promise<Row> {
  const name = `bench_fleet_${w}`;
  const cluster = postgresCluster();
  await asSuperuser((sql) => sql.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
  await asSuperuser((sql) => sql.unsafe(`CREATE DATABASE ${name}`));
  const url = cluster.url(name);
  const root = mkdtempSync(join(tmpdir(), "li-bench-fleet-"));
  const legEnv = { ...process.env, LI_HOME: join(root, "legs"), LI_HOST_ID: "bench-legs", LI_HOST_NAME: "bench-legs", LI_DB: url, NO_COLOR: "1" };
  const watchers: Subprocess<"ignore", "pipe", "inherit">[] = [];
  try {
    if ((await Bun.spawn([LI, "agent", "--", "true"], { env: legEnv, stdout: "ignore", stderr: "inherit" }).exited) !== 0) throw new Error("the first leg failed");
    await asSuperuser((sql) => sql.unsafe("CREATE EXTENSION IF NOT EXISTS pg_stat_statements"), name);
    const outs = [];
    for (let i = 0; i < w; i++) {
      const host = `bench-host-${i}`;
      const argv = [LI, "watch", ...(values.poll ? ["--poll", values.poll] : [])];
      const proc = Bun.spawn(argv, { env: { ...process.env, LI_HOME: join(root, host), LI_HOST_ID: host, LI_HOST_NAME: host, LI_DB: url, NO_COLOR: "1" }, stdin: "ignore", stdout: "pipe", stderr: "inherit" });
      watchers.push(proc);
      outs.push(collectLines(proc.stdout));
    }
    while (!outs.every((o) => o.lines.some((l) => l.includes(" start ")))) {
      if (watchers.some((p) => p.exitCode !== null)) throw new Error("a watcher exited");
      await Bun.sleep(50);
    }
    // The fresh database's tables analyzed now, not by autovacuum during a window; then every start-up pass
    // over (under load they run late): the database's transactions still for 2 s, or 30 s gone by.
    await asSuperuser((sql) => sql.unsafe("VACUUM ANALYZE"), name);
    const quietBy = performance.now() + 30_000;
    for (let last = -1; performance.now() < quietBy; ) {
      const [row] = await asSuperuser((sql) => sql`SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = current_database()`, name);
      if (last >= 0 && Number(row.n) - last <= 3) break;
      last = Number(row.n);
      await Bun.sleep(2000);
    }
    const [conns] = await asSuperuser((sql) => sql`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`, name);

    const idleFrom = await counters(name, watchers);
    await Bun.sleep(IDLE_SECONDS * 1000);
    const idleTo = await counters(name, watchers);

    const legMs: number[] = [];
    const legsFrom = await counters(name, watchers);
    for (let i = 0; i < LEGS; i++) {
      const t0 = performance.now();
      const code = await Bun.spawn([LI, "agent", "--", "true"], { env: legEnv, stdout: "ignore", stderr: "ignore" }).exited;
      legMs.push(performance.now() - t0);
      if (code !== 0) throw new Error(`leg ${i} exited ${code}`);
    }
    const legsTo = await counters(name, watchers);
    const seconds = (legsTo.at - legsFrom.at) / 1000;
    const net = (key: "xacts" | "statements" | "cpu") => (legsTo[key] - legsFrom[key] - rate(idleFrom, idleTo, key) * seconds) / LEGS;

    const waits: number[] = [];
    for (let i = 0; i < WAITS; i++) {
      const detach = Bun.spawn([LI, "agent", "--detach", "--json", "--", "sleep", "1"], { env: legEnv, stdout: "pipe", stderr: "inherit" });
      const started = JSON.parse(await new Response(detach.stdout).text()) as { session_id: string };
      await detach.exited;
      const wait = Bun.spawn([LI, "wait", started.session_id], { env: legEnv, stdout: "ignore", stderr: "inherit" });
      await wait.exited;
      const returned = Date.now();
      const [row] = await asSuperuser((sql) => sql`SELECT ended_at FROM li.sessions WHERE id = ${started.session_id}`, name);
      waits.push(returned - Number(row.ended_at) * 1000);
    }
    return {
      watchers: w,
      connections: conns.n as number,
      idle_xacts_per_s: r2(rate(idleFrom, idleTo, "xacts")),
      idle_statements_per_s: r2(rate(idleFrom, idleTo, "statements")),
      idle_watcher_cpu_ms_per_s: r2(rate(idleFrom, idleTo, "cpu")),
      per_leg_xacts: r2(net("xacts")),
      per_leg_statements: r2(net("statements")),
      per_leg_watcher_cpu_ms: r2(net("cpu")),
      leg_p50_ms: r2(quantile(legMs, 0.5)),
      wait_after_end_p50_ms: r2(quantile(waits, 0.5)),
      wait_after_end_min_ms: r2(Math.min(...waits)),
      wait_after_end_max_ms: r2(Math.max(...waits)),
      load: loadavg().map(r2),
    };
  } finally {
    for (const p of watchers) p.kill("SIGTERM");
    await Promise.all(watchers.map((p) => p.exited));
    await asSuperuser((sql) => sql.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).catch(() => {});
    rmSync(root, { recursive: true, force: true });
  }
}

try {
  const rows: Row[] = [];
  for (const w of WATCHER_COUNTS) {
    const row = await measure(w);
    rows.push(row);
    console.log(JSON.stringify({ bench: "fleet", legs: LEGS, poll: values.poll ?? "default", idle_window_s: IDLE_SECONDS, ...row }));
  }
  const floor = rows[0]!;
  for (const row of rows.slice(1)) {
    console.log(
      JSON.stringify({
        bench: "fleet",
        ratio_to_watchers: floor.watchers,
        watchers: row.watchers,
        per_leg_xacts: r2(row.per_leg_xacts / floor.per_leg_xacts),
        per_leg_statements: r2(row.per_leg_statements / floor.per_leg_statements),
        wait_after_end_p50: r2(row.wait_after_end_p50_ms / floor.wait_after_end_p50_ms),
        idle_xacts_per_watcher_per_s: r2(row.idle_xacts_per_s / row.watchers),
      }),
    );
  }
} finally {
  stopPostgresCluster();
}
