// Benchmark `ls-scale`: `li ls` on a ledger of 1,000,000 sessions against one of 51, the same output
// size (limits 1, 2 and 50, and --status), as fresh processes, interleaved, medians. The 51-session
// ledger is the floor: what `li ls` costs when the table is small.
// Usage: bun bench/ls-scale.ts [--rows 1000000] [--runs 30]   (build dist/li first)

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { bigLedger } from "./big-ledger.ts";
import { r2 } from "./floor.ts";

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
};
const ROWS = arg("rows", 1_000_000);
const RUNS = arg("runs", 30);
const SMALL = 51;
const LI = join(import.meta.dir, "../dist/li");
const work = mkdtempSync(join(tmpdir(), "li-bench-ls-"));

const homes = { small: join(work, "small"), big: join(work, "big") };
bigLedger(homes.small, SMALL);
bigLedger(homes.big, ROWS);

const variants: { name: string; args: string[]; lines: number }[] = [
  { name: "--limit 1", args: ["--limit", "1"], lines: 1 },
  { name: "--limit 2", args: ["--limit", "2"], lines: 2 },
  { name: "--limit 50", args: ["--limit", "50"], lines: 50 },
  { name: "--status completed --limit 50", args: ["--status", "completed", "--limit", "50"], lines: 50 },
];
const times = new Map<string, number[]>();
for (let round = -3; round < RUNS; round++) {
  for (const v of variants) {
    for (const [size, home] of Object.entries(homes)) {
      const t0 = performance.now();
      const r = Bun.spawnSync([LI, "ls", "--json", ...v.args], { env: { ...process.env, LI_HOME: home, NO_COLOR: "1" }, stdout: "pipe", stderr: "pipe" });
      const ms = performance.now() - t0;
      // Same output size on both ledgers, or the comparison means nothing.
      const rows = r.exitCode === 0 ? (JSON.parse(r.stdout.toString()) as { entities: unknown[] }).entities.length : -1;
      if (rows !== v.lines) throw new Error(`li ls ${v.args.join(" ")} on ${size}: exit ${r.exitCode}, ${rows} rows: ${r.stderr}`);
      if (round >= 0) {
        const key = `${v.name} ${size}`;
        times.set(key, [...(times.get(key) ?? []), ms]);
      }
    }
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const result: Record<string, { small_ms: number; big_ms: number; ratio: number }> = {};
for (const v of variants) {
  const small = median(times.get(`${v.name} small`)!);
  const big = median(times.get(`${v.name} big`)!);
  result[v.name] = { small_ms: r2(small), big_ms: r2(big), ratio: r2(big / small) };
  console.log(`li ls ${v.name.padEnd(30)} ${SMALL} sessions ${small.toFixed(2)} ms   ${ROWS} sessions ${big.toFixed(2)} ms   ${(big / small).toFixed(2)}×`);
}
const worst = Math.max(...Object.values(result).map((x) => x.ratio));
console.log(`worst ${ROWS} / ${SMALL} = ${worst}× (target ≤ 1.1×)`);
console.log(JSON.stringify({ bench: "ls-scale", runs: RUNS, rows: ROWS, small_rows: SMALL, cases: result, worst_ratio: worst }));
rmSync(work, { recursive: true, force: true }); // the 1M-session ledger is a few hundred MB
