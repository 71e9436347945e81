// Benchmark: what containment (SPEC §8.7) adds to `li agent --no-persist -- true`: a cgroup made, the
// command born in it (clone3 CLONE_INTO_CGROUP) and the cgroup removed, or the /proc scan of the
// LI_LEG_RUN_ID fallback at the end, against the same leg with LI_CONTAINMENT=off (only the command's
// process group, as before). Medians of interleaved rounds, and the
// environ scan again with 1,000 extra processes on the host (sleeps this bench starts and ends).
// Usage: bun bench/containment.ts [RUNS=40] [--processes 1000]   (needs dist/li: npm run build)

import { mkdtempSync, rmdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LegCgroup } from "../src/legs/cgroup.ts";
import { spawnContained, type ContainmentMode } from "../src/legs/leg-processes.ts";
import { readStartTicks } from "../src/host/proc.ts";

const args = process.argv.slice(2);
const at = args.indexOf("--processes");
const EXTRA = at >= 0 ? Number(args[at + 1]) : 1000;
const RUNS = Number(args.find((a, i) => /^\d+$/.test(a) && args[i - 1] !== "--processes") ?? 40);
const li = join(import.meta.dir, "../dist/li");
const dir = mkdtempSync(join(tmpdir(), "li-bench-contain-"));
const trueBin = Bun.which("true") ?? "/bin/true";
const base: Record<string, string> = { ...(process.env as Record<string, string>), LI_HOME: join(dir, "home"), NO_COLOR: "1" };

const probe = LegCgroup.create(`li-bench-probe-${process.pid}`);
if (probe) rmdirSync(probe.dir);
const modes: { name: string; env: Record<string, string> }[] = [
  { name: "off (the group only)", env: { LI_CONTAINMENT: "off" } },
  ...(probe ? [{ name: "cgroup", env: {} }] : []),
  { name: "environ", env: { LI_CONTAINMENT: "environ" } },
];
if (!probe) console.log("no cgroup can be made here (not root, no delegated cgroup): the cgroup case is left out");

function run(env: Record<string, string>): number {
  const t0 = performance.now();
  const r = Bun.spawnSync([li, "agent", "--no-persist", "--", trueBin], { env: { ...base, ...env }, stdout: "ignore", stderr: "ignore", stdin: "ignore" });
  const dt = performance.now() - t0;
  if (r.exitCode !== 0) throw new Error(`li agent exited ${r.exitCode}`);
  return dt;
}

function rounds(label: string): Map<string, number> {
  const times = new Map<string, number[]>(modes.map((m) => [m.name, []]));
  for (let round = 0; round < RUNS + 3; round++) {
    // Interleaved so machine noise hits every case alike; the first rounds warm the page cache.
    for (const m of modes) {
      const dt = run(m.env);
      if (round >= 3) times.get(m.name)!.push(dt);
    }
  }
  const medians = new Map([...times].map(([k, v]) => [k, [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]!]));
  const floor = medians.get(modes[0]!.name)!;
  console.log(`${label}: li agent --no-persist -- true, ${RUNS} interleaved rounds, medians`);
  for (const [name, ms] of medians) console.log(`  ${name.padEnd(22)} ${ms.toFixed(2)} ms  (+${(ms - floor).toFixed(2)} ms, ${(ms / floor).toFixed(3)}× off)`);
  return medians;
}

/**
 * The same work in this process, without li's start-up around it (far less noise on a loaded machine):
 * spawn `true` contained as li does, wait for it, list what is left, read the figures, release.
 */
async function inProcess(label: string): Promise<void> {
  const leg = { runId: `bench-${process.pid}`, supervisorStartTicks: readStartTicks(process.pid), startedAt: Date.now() / 1000 };
  const inProcessModes: ContainmentMode[] = ["off", ...(probe ? (["auto"] as const) : []), "environ"];
  const times = new Map<ContainmentMode, number[]>(inProcessModes.map((m) => [m, []]));
  for (let round = 0; round < RUNS + 3; round++) {
    for (const mode of inProcessModes) {
      const runId = `${leg.runId}-${round}-${mode}`;
      const t0 = performance.now();
      const { child, processes } = spawnContained({ ...leg, runId }, mode, (cgroup) => Bun.spawn([trueBin], { stdio: ["ignore", "ignore", "ignore"], env: { LI_LEG_RUN_ID: runId }, ...(cgroup ? { cgroup } : {}) }));
      await child.exited;
      if (processes) {
        processes.list();
        processes.usage();
        processes.release();
      }
      if (round >= 3) times.get(mode)!.push(performance.now() - t0);
    }
  }
  const med = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]!;
  const floor = med(times.get("off")!);
  console.log(`${label}: in this process, spawn true + containment, ${RUNS} interleaved rounds, medians`);
  for (const [mode, v] of times) console.log(`  ${(mode === "auto" ? "cgroup" : mode).padEnd(22)} ${med(v).toFixed(3)} ms  (+${(med(v) - floor).toFixed(3)} ms over off)`);
}

const visible = () => Bun.spawnSync(["sh", "-c", "ls /proc | grep -c '^[0-9]'"]).stdout.toString().trim();
console.log(`processes on the host: ${visible()}`);
rounds("as the host is");
await inProcess("as the host is");

const sleeps: ReturnType<typeof Bun.spawn>[] = [];
try {
  for (let i = 0; i < EXTRA; i++) sleeps.push(Bun.spawn(["sleep", "600"], { stdio: ["ignore", "ignore", "ignore"] }));
  console.log(`processes on the host: ${visible()} (with ${EXTRA} sleeps)`);
  rounds(`with ${EXTRA} more processes`);
  await inProcess(`with ${EXTRA} more processes`);
} finally {
  for (const s of sleeps) s.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
}
