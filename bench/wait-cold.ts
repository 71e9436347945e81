// Benchmark `wait-cold`: `li wait` on an already-terminal id as a fresh process — on an empty ledger, on a
// ledger of 1,000,000 sessions, and a compiled hello-world built in the same run — interleaved, medians.
// Usage: bun bench/wait-cold.ts [--rows 1000000] [--runs 40] [--baseline OTHER_LI]   (build dist/li first)
// --baseline adds OTHER_LI (e.g. a build of an older commit) waiting on a session it recorded itself.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { bigLedger, SESSION_COLUMNS } from "./big-ledger.ts";
import { compileFloor } from "./floor.ts";

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
};
const ROWS = arg("rows", 1_000_000);
const RUNS = arg("runs", 40);
const LI = join(import.meta.dir, "../dist/li");
const work = mkdtempSync(join(tmpdir(), "li-bench-cold-"));

// The floor: a compiled hello-world, built with the same flags as dist/li.
const hello = compileFloor(work, "hello", 'console.log("hello");\n');

const TARGET = "7a3e0c1d-5b2f-4c8e-9d10-1b2c3d4e5f60";

/** A ledger holding `rows` terminal sessions plus the target (a finished session with one leg). */
function makeLedger(name: string, rows: number): string {
  const home = join(work, name);
  bigLedger(home, rows, (db, now) => {
    db.run(`INSERT INTO sessions ${SESSION_COLUMNS.replace(")", ", current_leg_id)")} VALUES (?, 'completed', 'run.completed.ok', ?, ?, ?, ?, 0, 'leg-target')`, [TARGET, now, now, now, now]);
    db.run(
      "INSERT INTO legs (id, session_id, seq, run_id, state_root, artifact_root, command, started_at, ended_at, status, exit_code) VALUES ('leg-target', ?, 1, 'run-target', '/r', '/r/artifacts', '[\"true\"]', ?, ?, 'completed', 0)",
      [TARGET, now, now],
    );
  });
  return home;
}

const empty = makeLedger("empty", 0);
const big = makeLedger("big", ROWS);

const baselineAt = process.argv.indexOf("--baseline");
const baseline = baselineAt >= 0 ? process.argv[baselineAt + 1]! : null;
/** The baseline records its own leg, on a ledger of its own schema, and waits on that session. */
function baselineCase() {
  if (!baseline) return [];
  const home = join(work, "baseline");
  const made = Bun.spawnSync([baseline, "agent", "--json", "--", "true"], { env: { ...process.env, LI_HOME: home }, stdout: "pipe", stderr: "ignore" });
  const session = (JSON.parse(made.stdout.toString()) as { session_id: string }).session_id;
  return [{ name: "baseline, its own one-session ledger", argv: [baseline, "wait", session], home, check: `${session}\tstatus=completed` }];
}

const expectLine = `${TARGET}\tstatus=completed`;
const cases: { name: string; argv: string[]; home?: string; check?: string }[] = [
  { name: "hello-world", argv: [hello] },
  { name: "empty ledger", argv: [LI, "wait", TARGET], home: empty, check: expectLine },
  { name: `${ROWS} sessions`, argv: [LI, "wait", TARGET], home: big, check: expectLine },
  { name: `${ROWS} sessions, 8-char prefix`, argv: [LI, "wait", TARGET.slice(0, 8)], home: big, check: expectLine },
  ...baselineCase(),
];
const times = new Map<string, number[]>(cases.map((c) => [c.name, []]));
// CPU time (user + system) of each process as well: on a loaded machine the wall time mostly says how long
// the process waited for a core, its CPU time what it did (a figure to compare with a quiet run's).
const cpu = new Map<string, number[]>(cases.map((c) => [c.name, []]));
for (let run = -3; run < RUNS; run++) {
  for (const c of cases) {
    const env = { ...process.env, NO_COLOR: "1", ...(c.home ? { LI_HOME: c.home } : {}) };
    const t0 = performance.now();
    const r = Bun.spawnSync(c.argv, { env, stdout: "pipe", stderr: "pipe" });
    const ms = performance.now() - t0;
    if (c.check && (!r.stdout.toString().startsWith(c.check) || r.exitCode !== 0)) throw new Error(`${c.name}: ${r.stdout} ${r.stderr}`);
    if (run >= 0) {
      // The first rounds only warm the page cache.
      times.get(c.name)!.push(ms);
      const usage = r.resourceUsage;
      if (usage) cpu.get(c.name)!.push(Number(usage.cpuTime.user + usage.cpuTime.system) / 1000);
    }
  }
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};
const r2 = (x: number) => Math.round(x * 100) / 100;
const m = Object.fromEntries(cases.map((c) => [c.name, r2(median(times.get(c.name)!))]));
const cpuMs = Object.fromEntries(cases.map((c) => [c.name, r2(median(cpu.get(c.name)!))]));
for (const c of cases) console.log(`${c.name.padEnd(32)} median ${m[c.name]} ms, CPU ${cpuMs[c.name]} ms`);
const helloMs = m["hello-world"]!;
const emptyMs = m["empty ledger"]!;
const bigMs = m[`${ROWS} sessions`]!;
const result = {
  bench: "wait-cold",
  runs: RUNS,
  rows: ROWS,
  median_ms: m,
  cpu_median_ms: cpuMs,
  empty_vs_hello: r2(emptyMs / helloMs),
  cpu_empty_vs_hello: r2(cpuMs["empty ledger"]! / cpuMs["hello-world"]!),
  big_vs_empty: r2(bigMs / emptyMs),
  ...(baseline ? { baseline_vs_hello: r2(m["baseline, its own one-session ledger"]! / helloMs), cpu_baseline_vs_hello: r2(cpuMs["baseline, its own one-session ledger"]! / cpuMs["hello-world"]!) } : {}),
};
console.log(`empty / hello-world = ${result.empty_vs_hello}× (target ≤ 2.0×; CPU ${result.cpu_empty_vs_hello}×); ${ROWS} / empty = ${result.big_vs_empty}× (target ≤ 1.10×)`);
console.log(JSON.stringify(result));
rmSync(work, { recursive: true, force: true }); // the 1M-session ledger is ~350 MB
