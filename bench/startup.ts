// Benchmark: start-up of the compiled binary (`li --version`, `li show <id>`) vs a compiled
// hello-world built with the same flags in the same run — the floor.
// Usage: bun bench/startup.ts [RUNS=40]   (needs dist/li: npm run build)

import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { compileFloor } from "./floor.ts";

const RUNS = Number(process.argv[2] ?? 40);
const li = join(import.meta.dir, "../dist/li");
const dir = mkdtempSync(join(tmpdir(), "li-bench-startup-"));
const hello = compileFloor(dir, "hello", 'console.log("hello");\n');

const env = { ...process.env, LI_HOME: join(dir, "home"), NO_COLOR: "1" };
const id = Bun.spawnSync([li, "state", "create", "team"], { env }).stdout.toString().trim();
if (!id) throw new Error("could not create an entity with dist/li");

/** Runs the cases round-robin (so a slow moment of the shared machine hits all of them alike); medians. */
function interleavedMs(cases: string[][]): { median: number; p90: number }[] {
  const times: number[][] = cases.map(() => []);
  for (let i = 0; i < RUNS + 3; i++) {
    cases.forEach((argv, c) => {
      const t0 = performance.now();
      const r = Bun.spawnSync(argv, { env, stdout: "ignore", stderr: "ignore" });
      const dt = performance.now() - t0;
      if (r.exitCode !== 0) throw new Error(`${argv.join(" ")} exited ${r.exitCode}`);
      if (i >= 3) times[c]!.push(dt); // the first rounds warm the page cache
    });
  }
  return times.map((t) => {
    t.sort((a, b) => a - b);
    return { median: t[Math.floor(t.length / 2)]!, p90: t[Math.floor(t.length * 0.9)]! };
  });
}

const [hw, version, show] = interleavedMs([[hello], [li, "--version"], [li, "show", id]]) as [
  { median: number; p90: number },
  { median: number; p90: number },
  { median: number; p90: number },
];
const fmt = (x: { median: number; p90: number }) => `median ${x.median.toFixed(1)} ms, p90 ${x.p90.toFixed(1)} ms`;
console.log(`startup over ${RUNS} interleaved rounds`);
console.log(`  compiled hello-world  ${fmt(hw)}`);
console.log(`  li --version          ${fmt(version)}  (${(version.median / hw.median).toFixed(2)}× hello-world)`);
console.log(`  li show <id>          ${fmt(show)}  (${(show.median / hw.median).toFixed(2)}× hello-world)`);
console.log(
  JSON.stringify({
    bench: "startup",
    runs: RUNS,
    hello_ms: Number(hw.median.toFixed(2)),
    version_ms: Number(version.median.toFixed(2)),
    show_ms: Number(show.median.toFixed(2)),
    version_ratio: Number((version.median / hw.median).toFixed(2)),
    show_ratio: Number((show.median / hw.median).toFixed(2)),
  }),
);
