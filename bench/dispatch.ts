// Benchmark `dispatch`: submit → the command started, one run at a time, for li (`li agent --queue Q
// --detach`, taken from the queue and started as a leg by a running `li watch`) on SQLite and on PostgreSQL,
// task-spooler (`tsp`) and nq, round by round in one run; against the floor of the bench starting the same
// command itself. The command is `/bin/sh -c 'date +%s%N >> MARKS'`: the latency is from just before the
// submitting process is spawned to the wall clock the command wrote, so every figure includes its
// submitter's own start-up. For li it prints the parts: the submit's commit, the watcher's lease, the
// supervisor's setup, the command (the ledger's times of the run and the watcher's log, all one clock).
// Usage: bun bench/dispatch.ts [--n 50] [--only li,li-pg,tsp,nq] [--baseline PATH-TO-AN-OLDER-li]   (build dist/li first; tsp and nq from
// Debian's task-spooler and nq packages; li-pg starts a throwaway PostgreSQL cluster as the tests do)

import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { handlerSpawnFloorMs, quantile, r2, wallNs } from "./floor.ts";
import { benchDatabase, type BenchDatabase } from "./pg-database.ts";

const { values } = parseArgs({ options: { n: { type: "string", default: "50" }, only: { type: "string", default: "li,li-pg,tsp,nq" }, baseline: { type: "string" } } });
const N = Number(values.n);
const ONLY = new Set(values.only.split(","));
const LI_BUILT = join(import.meta.dir, "../dist/li");
// --baseline PATH: another li binary (a build of an older commit), measured as li-base / li-pg-base in the same rounds.
const BASELINE = values.baseline;
const root = mkdtempSync(join(tmpdir(), "li-bench-dispatch-"));
const COMMAND = (marks: string) => ["/bin/sh", "-c", 'date +%s%N >> "$0"', marks];

/** One system under test: how to submit the command, and how to wait until it is done (untimed). */
interface System {
  name: string;
  /** The submitting process's argv for a command that appends to `marks`. */
  submit(marks: string): string[];
  env: Record<string, string | undefined>;
  /** After a round's mark: let the job end so the next round meets an idle queue. */
  settle(submitOut: string): Promise<void>;
  /** li: when its watcher logged the leg of run `id` started (its setup committed), epoch ms. */
  startedAt?(id: string): number | undefined;
  /** li (untimed, after the round): the run's commit and lease times from the ledger, epoch ms. */
  runTimes?(id: string): Promise<{ createdAt: number; leasedAt: number }>;
  stop(): Promise<void>;
}

/** The lines of a stream as they come. */
async function* lineStream(stream: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let buffer = "";
  for await (const chunk of stream) {
    buffer += decoder.decode(chunk, { stream: true });
    let i: number;
    while ((i = buffer.indexOf("\n")) >= 0) {
      yield buffer.slice(0, i);
      buffer = buffer.slice(i + 1);
    }
  }
}

const lines = (file: string) => (existsSync(file) ? readFileSync(file, "utf8").trim().split("\n").filter(Boolean) : []);

/**
 * Per round of a li system, from the spawn of the submitter: its commit (the run's created_at), the
 * watcher's lease (its started_at), the leg's setup committed (the watcher's schedule_start line, once the
 * supervisor reported it), the command's mark; and the submitter's exit, which comes after its commit.
 */
interface Phases {
  commit: number[];
  lease: number[];
  setup: number[];
  command: number[];
  exit: number[];
}
const phases = new Map<string, Phases>();

/** Submits once and returns ms from the spawn of the submitter to the mark its command wrote. */
async function round(system: System, marks: string): Promise<number> {
  const before = lines(marks).length;
  const start = wallNs();
  const proc = Bun.spawn(system.submit(marks), { env: system.env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  if (code !== 0) throw new Error(`${system.name}: the submit exited ${code}: ${err.trim()}`);
  const submitted = wallNs();
  const deadline = performance.now() + 30_000;
  for (;;) {
    const now = lines(marks);
    if (now.length > before) {
      const mark = BigInt(now.at(-1)!);
      await system.settle(out);
      const started = system.startedAt?.(out.trim());
      if (started !== undefined && system.runTimes) {
        const { createdAt, leasedAt } = await system.runTimes(out.trim());
        const startMs = Number(start) / 1e6;
        const p = phases.get(system.name) ?? { commit: [], lease: [], setup: [], command: [], exit: [] };
        p.commit.push(createdAt - startMs);
        p.lease.push(leasedAt - createdAt);
        p.setup.push(started - leasedAt);
        p.command.push(Number(mark) / 1e6 - started);
        p.exit.push(Number(submitted - start) / 1e6);
        phases.set(system.name, p);
      }
      return Number(mark - start) / 1e6;
    }
    if (performance.now() > deadline) throw new Error(`${system.name}: the command did not start within 30 s`);
    await Bun.sleep(1);
  }
}

async function run(argv: string[], env: Record<string, string | undefined>): Promise<string> {
  const proc = Bun.spawn(argv, { env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  if (code !== 0) throw new Error(`${argv.join(" ")} exited ${code}: ${err.trim()}`);
  return out;
}

/** li with a running watcher on `env`'s ledger; the queue has no limit, so each round meets a free slot. */
async function liSystem(name: string, env: Record<string, string | undefined>, LI = LI_BUILT): Promise<System> {
  await run([LI, "queue", "set", "bench", "--parallel", "0"], env);
  const watcher = Bun.spawn([LI, "watch", "--log-format", "json"], { env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const started = new Map<string, number>();
  void (async () => {
    for await (const line of lineStream(watcher.stdout)) {
      if (!line.includes('"schedule_start"')) continue;
      const entry = JSON.parse(line) as { time: string; run_id: string };
      started.set(entry.run_id, Date.parse(entry.time));
    }
  })();
  // The watcher is up once a submitted run starts: one untimed round.
  const system: System = {
    name,
    env,
    startedAt: (id) => started.get(id),
    runTimes: async (id) => {
      const shown = JSON.parse(await run([LI, "show", "--json", id], env)) as { entity: { created_at: number; started_at: number } };
      return { createdAt: shown.entity.created_at * 1000, leasedAt: shown.entity.started_at * 1000 };
    },
    submit: (marks) => [LI, "agent", "--queue", "bench", "--detach", "--", ...COMMAND(marks)],
    settle: async (out) => void (await run([LI, "wait", out.trim()], env)),
    stop: async () => {
      watcher.kill("SIGTERM");
      await watcher.exited;
    },
  };
  await round(system, join(root, `${name}-warm`));
  return system;
}

function tspSystem(): System {
  const env = { ...process.env, TS_SOCKET: join(root, "tsp.socket"), TS_SAVELIST: "", TMPDIR: root };
  return {
    name: "tsp",
    env,
    submit: (marks) => ["tsp", ...COMMAND(marks)],
    settle: async (out) => void (await run(["tsp", "-w", out.trim()], env).catch(() => "")),
    stop: async () => void (await run(["tsp", "-K"], env).catch(() => "")),
  };
}

function nqSystem(): System {
  const dir = join(root, "nq");
  mkdirSync(dir);
  const env = { ...process.env, NQDIR: dir };
  return {
    name: "nq",
    env,
    submit: (marks) => ["nq", "-q", ...COMMAND(marks)],
    settle: async () => void (await run(["nq", "-w"], env)),
    stop: async () => undefined,
  };
}

const systems: System[] = [];
let pg: BenchDatabase | null = null;
try {
  if (ONLY.has("li")) {
    const home = join(root, "li-home");
    systems.push(await liSystem("li", { ...process.env, LI_HOME: home, NO_COLOR: "1", LI_DB: undefined }));
  }
  if (ONLY.has("li") && BASELINE) systems.push(await liSystem("li-base", { ...process.env, LI_HOME: join(root, "li-base-home"), NO_COLOR: "1", LI_DB: undefined }, BASELINE));
  if (ONLY.has("li-pg")) {
    pg = await benchDatabase("bench_dispatch");
    systems.push(await liSystem("li-pg", { ...process.env, LI_HOME: join(root, "li-pg-home"), LI_DB: pg.url, NO_COLOR: "1" }));
    // Its own schema on the same server: the two watchers never see each other's queue.
    if (BASELINE) systems.push(await liSystem("li-pg-base", { ...process.env, LI_HOME: join(root, "li-pg-base-home"), LI_DB: pg.url, LI_PG_SCHEMA: "li_base", NO_COLOR: "1" }, BASELINE));
  }
  if (ONLY.has("tsp")) systems.push(tspSystem());
  if (ONLY.has("nq")) systems.push(nqSystem());

  const ms = new Map<string, number[]>(systems.map((s) => [s.name, []]));
  const floorMarks = join(root, "floor");
  const floor: number[] = [];
  for (let i = 0; i < N; i++) {
    // Interleaved, so every system meets the same machine load.
    for (const system of systems) ms.get(system.name)!.push(await round(system, join(root, `${system.name}-marks`)));
    floor.push(...(await handlerSpawnFloorMs(floorMarks, 1)));
    // Untimed: the previous legs' teardowns and the watchers' follow-up passes are over before the next round.
    await Bun.sleep(200 + Math.random() * 50);
  }

  const stats = (xs: number[]) => ({ p50_ms: r2(quantile(xs, 0.5)), p95_ms: r2(quantile(xs, 0.95)), max_ms: r2(Math.max(...xs)) });
  const floorP50 = quantile(floor, 0.5);
  const result: Record<string, unknown> = { bench: "dispatch", n: N, floor: stats(floor) };
  console.log(`floor (the bench starts the command itself): p50 ${floorP50.toFixed(2)} ms`);
  const p50 = (name: string) => quantile(ms.get(name) ?? [], 0.5);
  for (const system of systems) {
    const s = stats(ms.get(system.name)!);
    const vs = ["tsp", "nq"].filter((o) => o !== system.name && ms.has(o)).map((o) => `${(p50(system.name) / p50(o)).toFixed(2)}× ${o}`);
    console.log(`${system.name.padEnd(6)} submit → started: p50 ${s.p50_ms} ms, p95 ${s.p95_ms} ms, max ${s.max_ms} ms (${(s.p50_ms / floorP50).toFixed(1)}× the floor${vs.length ? `; ${vs.join(", ")}` : ""})`);
    const p = phases.get(system.name);
    const m = (xs: number[]) => quantile(xs, 0.5).toFixed(1);
    if (p) console.log(`${"".padEnd(6)} of which (medians): spawn → the submit's write ${m(p.commit)} ms, → li watch leased it ${m(p.lease)} ms, → the supervisor's setup committed ${m(p.setup)} ms, → the command ${m(p.command)} ms; the submitter exited ${m(p.exit)} ms after its spawn`);
    result[system.name] = { ...s, ...(p ? { commit_p50_ms: r2(quantile(p.commit, 0.5)), lease_p50_ms: r2(quantile(p.lease, 0.5)), setup_p50_ms: r2(quantile(p.setup, 0.5)), command_p50_ms: r2(quantile(p.command, 0.5)), submitter_exit_p50_ms: r2(quantile(p.exit, 0.5)) } : {}), floor_ratio: r2(s.p50_ms / floorP50), ...Object.fromEntries(["tsp", "nq"].filter((o) => o !== system.name && ms.has(o)).map((o) => [`vs_${o}`, r2(p50(system.name) / p50(o))])) };
  }
  const targets: Record<string, number> = { li: 50, "li-pg": 100 };
  for (const [name, target] of Object.entries(targets)) {
    if (ms.has(name)) console.log(`${name}: p50 target ≤ ${target} ms: ${p50(name) <= target ? "met" : "not met"}`);
  }
  console.log(JSON.stringify(result));
} finally {
  for (const system of systems) await system.stop().catch(() => undefined);
  await pg?.dispose();
  rmSync(root, { recursive: true, force: true });
}
