// Profile: where each millisecond of `li agent -- true` (and `--no-persist`) goes, from the marks li
// writes with LI_PROFILE_FILE set (src/util/profile.ts): for each step, the median over the runs of the
// wall time since the step before (ms since the process started for the first) and of the CPU time li
// used meanwhile (all its threads: far less sensitive to a loaded machine than the wall). Runs interleaved.
// Usage: bun bench/agent-profile.ts [RUNS=40]   (needs dist/li: npm run build)

import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";

const RUNS = Number(process.argv[2] ?? 40);
const li = join(import.meta.dir, "../dist/li");
const dir = mkdtempSync(join(tmpdir(), "li-bench-profile-"));
const trueBin = Bun.which("true") ?? "/bin/true";
const cases = [
  { name: "li agent -- true", argv: [li, "agent", "--", trueBin] },
  { name: "li agent --no-persist -- true", argv: [li, "agent", "--no-persist", "--", trueBin] },
];

type Marks = [string, number, number][];
const runs = new Map<string, { marks: Marks[]; wall: number[] }>(cases.map((c) => [c.name, { marks: [], wall: [] }]));
const before = loadavg()[0]!;
// The first leg creates and migrates the ledger: not counted.
Bun.spawnSync([li, "agent", "--", trueBin], { env: { ...process.env, LI_HOME: join(dir, "home"), NO_COLOR: "1" }, stdio: ["ignore", "ignore", "ignore"] });
for (let round = 0; round < RUNS + 3; round++) {
  for (const c of cases) {
    const file = join(dir, `profile-${round}.jsonl`);
    const t0 = performance.now();
    const r = Bun.spawnSync(c.argv, { env: { ...process.env, LI_HOME: join(dir, "home"), NO_COLOR: "1", LI_PROFILE_FILE: file }, stdio: ["ignore", "ignore", "ignore"] });
    const wall = performance.now() - t0;
    if (r.exitCode !== 0) throw new Error(`${c.argv.join(" ")} exited ${r.exitCode}`);
    const lines = readFileSync(file, "utf8").trim().split("\n");
    rmSync(file);
    if (round < 3) continue; // the first rounds warm the page cache
    const run = runs.get(c.name)!;
    run.marks.push((JSON.parse(lines[0]!) as { marks: Marks }).marks);
    run.wall.push(wall);
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(`li agent's steps, ${RUNS} interleaved runs each, medians (load ${before.toFixed(2)} before, ${loadavg()[0]!.toFixed(2)} after)`);
const summary: Record<string, unknown> = {};
for (const [name, run] of runs) {
  console.log(`\n${name}: wall ${median(run.wall).toFixed(2)} ms (spawn to exit, as bench/agent.ts times it)`);
  const names = run.marks[0]!.map(([n]) => n);
  const steps: Record<string, { wall: number; cpu: number }> = {};
  let wallSum = 0;
  let cpuSum = 0;
  console.log("     wall      cpu");
  names.forEach((step, i) => {
    const delta = (k: 1 | 2) => median(run.marks.map((m) => (m[i]?.[0] === step ? m[i]![k] - (i > 0 ? m[i - 1]![k] : 0) : NaN)).filter((x) => !Number.isNaN(x)));
    const wall = delta(1);
    const cpu = delta(2);
    wallSum += wall;
    cpuSum += cpu;
    steps[step] = { wall: Number(wall.toFixed(3)), cpu: Number(cpu.toFixed(3)) };
    console.log(`  ${wall.toFixed(2).padStart(7)}  ${cpu.toFixed(2).padStart(7)} ms  ${step}`);
  });
  console.log(`  ${wallSum.toFixed(2).padStart(7)}  ${cpuSum.toFixed(2).padStart(7)} ms  sums of the medians (the wall's rest: li's exit and its own spawn)`);
  summary[name] = { wall_ms: Number(median(run.wall).toFixed(3)), steps };
}
console.log(JSON.stringify({ bench: "agent-profile", runs: RUNS, load: before, cases: summary }));
rmSync(dir, { recursive: true, force: true });
