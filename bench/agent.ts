// Benchmark: `li agent -- true` end to end vs bare `true` (and `tsp -f true`, `nq` + `nq -w` when installed),
// with a split of where the time goes: start-up, spawn and capture, the database (setup + teardown).
// Usage: bun bench/agent.ts [RUNS=40] [--baseline OTHER_LI]   (needs dist/li: npm run build)
// --baseline adds `OTHER_LI agent -- true` and `OTHER_LI agent --no-persist -- true` (e.g. a build of an older
// commit) to the same rounds, on its own LI_HOME.
// Floors in the same rounds (agent-floors.ts): a compiled hello-world; a compiled program doing a durable
// leg's irreducible work in one process (open the ledger, commit, spawn, commit, close); and a compiled
// client of a resident process that holds the ledger open (the shape li does not have).

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { agentFloors } from "./agent-floors.ts";

const baselineAt = process.argv.indexOf("--baseline");
const baseline = baselineAt >= 0 ? process.argv[baselineAt + 1]! : null;
const RUNS = Number(process.argv.slice(2).find((a, i, all) => /^\d+$/.test(a) && all[i - 1] !== "--baseline") ?? 40);
const li = join(import.meta.dir, "../dist/li");
const dir = mkdtempSync(join(tmpdir(), "li-bench-agent-"));
const env: Record<string, string> = { ...(process.env as Record<string, string>), LI_HOME: join(dir, "home"), NO_COLOR: "1", TS_SOCKET: join(dir, "tsp.socket"), NQDIR: join(dir, "nq") };
const trueBin = Bun.which("true") ?? "/bin/true";

const baselineEnv = { ...env, LI_HOME: join(dir, "baseline-home") };
const floors = await agentFloors(dir, trueBin);
Object.assign(env, floors.env);

function run(argv: string[]): number {
  const t0 = performance.now();
  const r = Bun.spawnSync(argv, { env: argv[0] === baseline ? baselineEnv : env, stdout: "ignore", stderr: "ignore", stdin: "ignore" });
  const dt = performance.now() - t0;
  if (r.exitCode !== 0) throw new Error(`${argv.join(" ")} exited ${r.exitCode}`);
  return dt;
}

/** One case: a label and the argv lists run in order per round (timed together). */
interface Case {
  name: string;
  steps: string[][];
}

const cases: Case[] = [
  { name: "bare true", steps: [[trueBin]] },
  { name: "li --version (start-up)", steps: [[li, "--version"]] },
  { name: "li agent --no-persist -- true", steps: [[li, "agent", "--no-persist", "--", trueBin]] },
  { name: "li agent -- true", steps: [[li, "agent", "--", trueBin]] },
  { name: "floor: hello-world", steps: [[floors.hello]] },
  { name: "floor: one-process leg", steps: [[floors.oneProcess]] },
  { name: "floor: resident-process client", steps: [[floors.residentClient]] },
];
if (baseline) cases.push({ name: "baseline agent -- true", steps: [[baseline, "agent", "--", trueBin]] }, { name: "baseline --no-persist", steps: [[baseline, "agent", "--no-persist", "--", trueBin]] });
const tsp = Bun.which("tsp");
if (tsp) cases.push({ name: "tsp -f true", steps: [[tsp, "-f", trueBin]] });
const nq = Bun.which("nq");
if (nq) cases.push({ name: "nq true && nq -w", steps: [[nq, "-q", trueBin], [nq, "-w"]] });

// The first leg on a fresh LI_HOME also creates and migrates the ledger: reported apart.
const firstLeg = run([li, "agent", "--", trueBin]);

const times = new Map<string, number[]>(cases.map((c) => [c.name, []]));
for (let round = 0; round < RUNS + 3; round++) {
  // Interleaved so machine noise hits every case alike; the first rounds warm the page cache.
  for (const c of cases) {
    let total = 0;
    for (const step of c.steps) total += run(step);
    if (round >= 3) times.get(c.name)!.push(total);
  }
}
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};
const m = Object.fromEntries([...times].map(([k, v]) => [k, median(v)]));
const bare = m["bare true"]!;
const agent = m["li agent -- true"]!;
const noPersist = m["li agent --no-persist -- true"]!;
const startup = m["li --version (start-up)"]!;

console.log(`li agent over ${RUNS} interleaved rounds, medians`);
for (const [name, ms] of Object.entries(m)) console.log(`  ${name.padEnd(32)} ${ms.toFixed(2)} ms  (${(ms / bare).toFixed(2)}× bare true)`);
console.log(`  first leg on a fresh LI_HOME (creates and migrates the ledger): ${firstLeg.toFixed(2)} ms`);
console.log(`where the time goes (medians): start-up ${startup.toFixed(2)} ms; spawn, capture, run dir and manifest ${(noPersist - startup).toFixed(2)} ms; database (open, setup, teardown) ${(agent - noPersist).toFixed(2)} ms`);
const oneProcess = m["floor: one-process leg"]!;
const resident = m["floor: resident-process client"]!;
const hello = m["floor: hello-world"]!;
// Issue 27's targets, each against a floor measured in these same rounds.
console.log(`li agent -- true: ${(agent - oneProcess).toFixed(2)} ms over the one-process durable leg (target ≤ 5 ms: ${agent - oneProcess <= 5 ? "met" : "not met"})`);
console.log(`li agent --no-persist -- true: ${(noPersist - hello).toFixed(2)} ms over hello-world (target ≤ 4 ms: ${noPersist - hello <= 4 ? "met" : "not met"})`);
console.log(`li agent -- true costs ${(agent - bare).toFixed(2)} ms more than bare true; a client of a resident ledger process costs ${(resident - bare).toFixed(2)} ms more`);
if (baseline) console.log(`the baseline (${baseline}) costs ${(m["baseline agent -- true"]! - bare).toFixed(2)} ms more than bare true (${(m["baseline agent -- true"]! - oneProcess).toFixed(2)} over the one-process leg); its --no-persist ${(m["baseline --no-persist"]! - hello).toFixed(2)} ms over hello-world`);
console.log(
  JSON.stringify({
    bench: "agent",
    runs: RUNS,
    bare_true_ms: Number(bare.toFixed(2)),
    agent_ms: Number(agent.toFixed(2)),
    agent_no_persist_ms: Number(noPersist.toFixed(2)),
    startup_ms: Number(startup.toFixed(2)),
    agent_overhead_ms: Number((agent - bare).toFixed(2)),
    agent_ratio: Number((agent / bare).toFixed(2)),
    agent_no_persist_ratio: Number((noPersist / bare).toFixed(2)),
    floor_hello_ms: Number(m["floor: hello-world"]!.toFixed(2)),
    floor_one_process_overhead_ms: Number((oneProcess - bare).toFixed(2)),
    floor_resident_client_overhead_ms: Number((resident - bare).toFixed(2)),
    agent_over_one_process_ms: Number((agent - oneProcess).toFixed(2)),
    no_persist_over_hello_ms: Number((noPersist - hello).toFixed(2)),
    ...(baseline ? { baseline_overhead_ms: Number((m["baseline agent -- true"]! - bare).toFixed(2)), baseline_over_one_process_ms: Number((m["baseline agent -- true"]! - oneProcess).toFixed(2)), baseline_no_persist_over_hello_ms: Number((m["baseline --no-persist"]! - hello).toFixed(2)) } : {}),
    ...(m["tsp -f true"] !== undefined ? { tsp_ms: Number(m["tsp -f true"].toFixed(2)), tsp_ratio: Number((m["tsp -f true"] / bare).toFixed(2)) } : {}),
    ...(m["nq true && nq -w"] !== undefined ? { nq_ms: Number(m["nq true && nq -w"].toFixed(2)), nq_ratio: Number((m["nq true && nq -w"] / bare).toFixed(2)) } : {}),
  }),
);
floors.stop();
rmSync(dir, { recursive: true, force: true });
