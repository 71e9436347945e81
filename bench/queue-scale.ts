// Benchmark `queue-scale`: a queue holding 10,000 runs. Prints the submit rate (`li agent --queue Q --detach`
// processes, two at a time, against `li state create team` processes, the same start-up and one commit, in
// the same run; then the submit service in one process, which fills the queue), `li queue ls` and `li ls`
// (cold processes, medians) on the full ledger against the same commands on the ledger before the fill (flat
// means a ratio near 1; li ls also against a ledger holding one page's worth, the same rows shown), the resident memory of a `li watch` dispatching from the full queue against one on
// an empty ledger, and SQLite's EXPLAIN QUERY PLAN for the statements behind those views and the lease.
// Usage: bun bench/queue-scale.ts [--runs 10000] [--cli 200] [--reps 15]   (build dist/li first)

import { Database } from "bun:sqlite";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { resolvePaths } from "../src/ledger/location.ts";
import { openLedger } from "../src/ledger/open.ts";
import { ScheduleStatements } from "../src/ledger/rules/schedule.ts";
import { submitRun } from "../src/schedule/submit.ts";
import { quantile, r2 } from "./floor.ts";

const { values } = parseArgs({ options: { runs: { type: "string", default: "10000" }, cli: { type: "string", default: "200" }, reps: { type: "string", default: "15" } } });
const RUNS = Number(values.runs);
const CLI = Number(values.cli);
const REPS = Number(values.reps);
const LI = join(import.meta.dir, "../dist/li");
const root = mkdtempSync(join(tmpdir(), "li-bench-queue-"));
const home = join(root, "home");
const env = { ...process.env, LI_HOME: home, NO_COLOR: "1", LI_DB: undefined };

async function run(argv: string[], environment: Record<string, string | undefined> = env): Promise<string> {
  const proc = Bun.spawn(argv, { env: environment, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  if (code !== 0) throw new Error(`${argv.slice(1).join(" ")} exited ${code}: ${err.trim()}`);
  return out;
}

/** Median ms of `reps` cold runs of `argv`. */
async function coldMs(argv: string[], reps = REPS): Promise<number> {
  const ms: number[] = [];
  for (let i = 0; i < reps; i++) {
    const start = performance.now();
    await run(argv);
    ms.push(performance.now() - start);
  }
  return quantile(ms, 0.5);
}

/**
 * Medians of `argv` on two ledgers in interleaved rounds (a then b, `reps` times): the machine's drift
 * between two sequential measurements is larger than a flat listing's difference.
 */
async function interleavedMs(argv: string[], a: Record<string, string | undefined>, b: Record<string, string | undefined>, reps = REPS * 4): Promise<[number, number]> {
  const ta: number[] = [];
  const tb: number[] = [];
  for (let i = 0; i < reps; i++) {
    for (const [environment, into] of [[a, ta], [b, tb]] as const) {
      const start = performance.now();
      await run(argv, environment);
      into.push(performance.now() - start);
    }
  }
  return [quantile(ta, 0.5), quantile(tb, 0.5)];
}

/** Processes per second for `n` runs of `argv(i)`, `lanes` at a time. */
async function rate(n: number, lanes: number, argv: (i: number) => string[]): Promise<number> {
  let next = 0;
  const start = performance.now();
  await Promise.all(Array.from({ length: lanes }, async () => {
    while (next < n) await run(argv(next++));
  }));
  return n / ((performance.now() - start) / 1000);
}

/** VmRSS of a watcher on `environment` after it has run `seconds`, in MB. */
async function watcherRssMb(environment: Record<string, string | undefined>, seconds: number): Promise<number> {
  const proc = Bun.spawn([LI, "watch"], { env: environment, stdin: "ignore", stdout: "ignore", stderr: "ignore" });
  await Bun.sleep(seconds * 1000);
  const rss = Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${proc.pid}/status`, "utf8"))?.[1] ?? NaN) / 1024;
  proc.kill("SIGTERM");
  await proc.exited;
  return rss;
}

try {
  // The empty ledger's figures first: the floor the full one is compared with.
  await run([LI, "queue", "pause", "scale"]);
  const emptyQueueLs = await coldMs([LI, "queue", "ls"]);
  const emptyLs = await coldMs([LI, "ls"]);
  const emptyHome = join(root, "empty");
  await run([LI, "state", "create", "team"], { ...env, LI_HOME: emptyHome });
  const emptyRss = await watcherRssMb({ ...env, LI_HOME: emptyHome }, 5);

  // Submits through the CLI (the queue is paused: nothing runs), and the floor: a CLI write of one row.
  const cliRate = await rate(CLI, 2, () => [LI, "agent", "--queue", "scale", "--detach", "--", "true"]);
  // li ls with a page's worth queued (the same rows on the page as with the full queue): flat means full ≈ this.
  const pageLs = await coldMs([LI, "ls"]);
  // A copy of that ledger (closed and checkpointed by every li that wrote it), to list beside the full one.
  const pageHome = join(root, "page");
  mkdirSync(pageHome, { mode: 0o700 });
  for (const file of ["state.db", "state.db-wal", "state.db-shm"]) if (existsSync(join(home, file))) copyFileSync(join(home, file), join(pageHome, file));
  const pageEnv = { ...env, LI_HOME: pageHome };
  // The floor's rows come after the copy: on both ledgers the page shows queued runs only.
  const floorRate = await rate(CLI, 2, () => [LI, "state", "create", "team"]);

  // The rest through the submit service, in one process.
  const ledger = openLedger(resolvePaths({ env: { LI_HOME: home } }), { create: false });
  const request = { version: 1 as const, argv: ["true"], workdir: root, env: { PATH: process.env.PATH ?? "/usr/bin:/bin" }, options: {} };
  const fill = RUNS - CLI;
  const t0 = performance.now();
  for (let i = 0; i < fill; i++) await submitRun(ledger, { queue: "scale", request });
  const serviceRate = fill / ((performance.now() - t0) / 1000);
  ledger.close();

  const fullQueueLs = await coldMs([LI, "queue", "ls"]);
  const fullLs = await coldMs([LI, "ls"]);
  const fullLsQueued = await coldMs([LI, "ls", "--kind", "schedule_run", "--status", "queued"]);
  const [fullLsInterleaved, pageLsInterleaved] = await interleavedMs([LI, "ls"], env, pageEnv);

  // A watcher dispatching from the full queue, one at a time (each leg runs `true`).
  await run([LI, "queue", "set", "scale", "--parallel", "1"]);
  await run([LI, "queue", "resume", "scale"]);
  const fullRss = await watcherRssMb(env, 5);

  // The plans behind li queue ls, the lease and a run's place in the queue.
  const db = new Database(join(home, "state.db"), { readonly: true });
  // The watcher is stopped, but a leg it started just before may still be writing its outcome.
  db.run("PRAGMA busy_timeout = 10000");
  const plans: Record<string, string[]> = {};
  const explain = new ScheduleStatements({
    all: async <T>(text: string, params: readonly unknown[]) => {
      plans[text.replace(/\s+/g, " ").slice(0, 90)] = (db.query(`EXPLAIN QUERY PLAN ${text}`).all(...(params as never[])) as { detail: string }[]).map((r) => r.detail);
      return [] as T[];
    },
    run: async () => 0,
    forUpdate: "",
    skipLocked: "",
  });
  await explain.queueCounts();
  await explain.leaseCandidates("scale", 8);
  await explain.queuedAhead("scale", 0, "x");
  await explain.queuedTail("scale", 64);
  db.close();

  const lines = [
    `submit, li agent --queue --detach (CLI, 2 at a time): ${cliRate.toFixed(1)}/s; li state create (the same start-up and one commit): ${floorRate.toFixed(1)}/s (${(cliRate / floorRate).toFixed(2)}× its rate)`,
    `submit, the service in one process: ${serviceRate.toFixed(0)}/s`,
    `li queue ls: ${emptyQueueLs.toFixed(2)} ms empty, ${fullQueueLs.toFixed(2)} ms with ${RUNS} queued (${(fullQueueLs / emptyQueueLs).toFixed(2)}×)`,
    `li ls: ${emptyLs.toFixed(2)} ms empty, ${pageLs.toFixed(2)} ms with ${CLI} queued (a full page), ${fullLs.toFixed(2)} ms with ${RUNS} queued (${(fullLs / emptyLs).toFixed(2)}× empty, ${(fullLs / pageLs).toFixed(2)}× the full page); li ls --kind schedule_run --status queued: ${fullLsQueued.toFixed(2)} ms`,
    `li ls, interleaved rounds: ${fullLsInterleaved.toFixed(2)} ms with ${RUNS} queued, ${pageLsInterleaved.toFixed(2)} ms with ${CLI} queued (the same page): ${(fullLsInterleaved / pageLsInterleaved).toFixed(2)}×`,
    `li watch resident: ${emptyRss.toFixed(1)} MB on an empty ledger, ${fullRss.toFixed(1)} MB dispatching from ${RUNS} queued (${(fullRss / emptyRss).toFixed(2)}×)`,
    ...Object.entries(plans).map(([q, plan]) => `plan: ${q}… → ${plan.join("; ")}`),
  ];
  for (const line of lines) console.log(line);
  console.log(
    JSON.stringify({
      bench: "queue-scale",
      runs: RUNS,
      submit_cli_per_s: r2(cliRate),
      submit_floor_per_s: r2(floorRate),
      submit_service_per_s: r2(serviceRate),
      queue_ls_ms: { empty: r2(emptyQueueLs), full: r2(fullQueueLs), ratio: r2(fullQueueLs / emptyQueueLs) },
      ls_ms: { empty: r2(emptyLs), page: r2(pageLs), full: r2(fullLs), ratio: r2(fullLs / emptyLs), ratio_to_page: r2(fullLs / pageLs), queued_only: r2(fullLsQueued), interleaved: { full: r2(fullLsInterleaved), page: r2(pageLsInterleaved), ratio: r2(fullLsInterleaved / pageLsInterleaved) } },
      watch_rss_mb: { empty: r2(emptyRss), full: r2(fullRss), ratio: r2(fullRss / emptyRss) },
      plans,
    }),
  );
} finally {
  rmSync(root, { recursive: true, force: true });
}
