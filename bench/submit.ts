// Benchmark `submit`: the submitting process of a scheduled run, `li agent --queue Q --detach -- true`, alone
// (no watcher: the runs stay queued), wall and CPU, against a compiled hello-world in the same rounds. It is
// the first part of issue 23's dispatch latency (bench/dispatch.ts times submit → command started whole).
// Usage: bun bench/submit.ts [RUNS=40] [--baseline OTHER_LI]   (needs dist/li: npm run build)
// --baseline adds the same submit by another build (e.g. main's before a change), on its own LI_HOME.

import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { compileFloor, quantile, r2 } from "./floor.ts";

const baselineAt = process.argv.indexOf("--baseline");
const baseline = baselineAt >= 0 ? process.argv[baselineAt + 1]! : null;
const RUNS = Number(process.argv.slice(2).find((a, i, all) => /^\d+$/.test(a) && all[i - 1] !== "--baseline") ?? 40);
const li = join(import.meta.dir, "../dist/li");
const dir = mkdtempSync(join(tmpdir(), "li-bench-submit-"));
const trueBin = Bun.which("true") ?? "/bin/true";
const hello = compileFloor(dir, "hello", 'console.log("hello");\n');

interface Case {
  name: string;
  argv: string[];
  home?: string;
}
const submit = (bin: string) => [bin, "agent", "--queue", "bench", "--detach", "--", trueBin];
const cases: Case[] = [
  { name: "floor: hello-world", argv: [hello] },
  { name: "li agent --queue --detach", argv: submit(li), home: join(dir, "home") },
  ...(baseline ? [{ name: "baseline: the same submit", argv: submit(baseline), home: join(dir, "baseline-home") }] : []),
];

const wall = new Map<string, number[]>(cases.map((c) => [c.name, []]));
const cpu = new Map<string, number[]>(cases.map((c) => [c.name, []]));
const loadBefore = loadavg()[0]!;
// The first three rounds create the ledgers and warm the page cache; interleaved so noise hits every case alike.
for (let round = -3; round < RUNS; round++) {
  for (const c of cases) {
    const env = { ...process.env, NO_COLOR: "1", LI_DB: undefined, ...(c.home ? { LI_HOME: c.home } : {}) };
    const t0 = performance.now();
    const r = Bun.spawnSync(c.argv, { env, stdout: "pipe", stderr: "pipe", stdin: "ignore" });
    const ms = performance.now() - t0;
    if (r.exitCode !== 0) throw new Error(`${c.argv.join(" ")} exited ${r.exitCode}: ${r.stderr}`);
    if (round < 0) continue;
    wall.get(c.name)!.push(ms);
    const usage = r.resourceUsage;
    if (usage) cpu.get(c.name)!.push(Number(usage.cpuTime.user + usage.cpuTime.system) / 1000);
  }
}

const med = (xs: number[]) => quantile(xs, 0.5);
const helloWall = med(wall.get("floor: hello-world")!);
const helloCpu = med(cpu.get("floor: hello-world")!);
console.log(`the submit of a scheduled run, ${RUNS} interleaved rounds, medians (load ${loadBefore.toFixed(2)} before, ${loadavg()[0]!.toFixed(2)} after)`);
const out: Record<string, unknown> = { bench: "submit", runs: RUNS, load_before: r2(loadBefore), load_after: r2(loadavg()[0]!) };
for (const c of cases) {
  const w = med(wall.get(c.name)!);
  const u = med(cpu.get(c.name)!);
  console.log(`  ${c.name.padEnd(28)} wall ${w.toFixed(2)} ms (${(w / helloWall).toFixed(2)}× hello-world, +${(w - helloWall).toFixed(2)})  CPU ${u.toFixed(2)} ms (${(u / helloCpu).toFixed(2)}×, +${(u - helloCpu).toFixed(2)})`);
  const key = c.name.startsWith("floor") ? "hello" : c.name.startsWith("baseline") ? "baseline" : "li";
  out[`${key}_wall_ms`] = r2(w);
  out[`${key}_cpu_ms`] = r2(u);
}
console.log(JSON.stringify(out));
rmSync(dir, { recursive: true, force: true });
