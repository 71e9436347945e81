// Benchmark `watch-idle` (SPEC §12.6): `dist/li watch` on a ledger with history and a handler but nothing to do —
// its CPU time and resident memory over an idle period (target: at most 80 MB resident), side by side with the
// floor: a compiled program that only stays alive, built with dist/li's flags in the same run.
// Usage: bun run build && bun bench/watch-idle.ts [--seconds 600] [--sessions 10000] [--sweep-interval 30s]

import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { resolvePaths } from "../src/ledger/location.ts";
import { openLedger } from "../src/ledger/open.ts";
import { addHandler } from "../src/notify/consumers.ts";
import { handlerHost } from "../src/notify/host.ts";
import { compileFloor, r2 } from "./floor.ts";

const { values } = parseArgs({ options: { seconds: { type: "string", default: "600" }, sessions: { type: "string", default: "10000" }, "sweep-interval": { type: "string", default: "30s" } } });
const SECONDS = Number(values.seconds);
const SESSIONS = Number(values.sessions);
const LI = resolve(import.meta.dir, "../dist/li");
if (!existsSync(LI)) throw new Error(`build the binary first: ${LI} is missing`);

const home = mkdtempSync(join(tmpdir(), "li-bench-idle-"));
const ledger = openLedger(resolvePaths({ env: { LI_HOME: home } }), { create: true });
for (let i = 0; i < SESSIONS; i++) {
  await ledger.createEntity("session", { id: `s-${String(i).padStart(6, "0")}` });
  await ledger.transition("session", `s-${String(i).padStart(6, "0")}`, { newStatus: "completed", reasonCode: "run.completed.ok" });
}
// Registered after the history: owed nothing, but every delivery pass still asks.
await addHandler(ledger, { name: "idle", kinds: [], ids: [], argv: ["/bin/true"], hostId: handlerHost() });
ledger.close();

const env: Record<string, string> = {};
for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith("LI_")) env[k] = v;
env.LI_HOME = home;
const idleBinary = compileFloor(home, "idle", "setInterval(() => {}, 1 << 30);\n");
const watcher = Bun.spawn([LI, "watch", "--sweep-interval", values["sweep-interval"]!, "--log-format", "json"], { env, stdin: "ignore", stdout: "pipe", stderr: "inherit" });
const floor = Bun.spawn([idleBinary], { stdin: "ignore", stdout: "ignore", stderr: "inherit" });

const TICKS = 100; // USER_HZ on Linux
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / TICKS; // utime, stime (fields 14 and 15)
}
function memoryKb(pid: number, key: "VmRSS" | "VmHWM"): number {
  const match = new RegExp(`^${key}:\\s+(\\d+) kB`, "m").exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return Number(match?.[1] ?? NaN);
}

await Bun.sleep(2000); // start-up and the first sweep are not idle time
const cpu0 = cpuSeconds(watcher.pid);
const floorCpu0 = cpuSeconds(floor.pid);
const rss0 = memoryKb(watcher.pid, "VmRSS");
let rssMax = rss0;
const started = performance.now();
while (performance.now() - started < SECONDS * 1000) {
  await Bun.sleep(Math.min(5000, SECONDS * 1000 - (performance.now() - started)));
  rssMax = Math.max(rssMax, memoryKb(watcher.pid, "VmRSS"));
}
const wall = (performance.now() - started) / 1000;
const cpu = cpuSeconds(watcher.pid) - cpu0;
const floorCpu = cpuSeconds(floor.pid) - floorCpu0;
const rss1 = memoryKb(watcher.pid, "VmRSS");
const hwm = memoryKb(watcher.pid, "VmHWM");
const floorRss = memoryKb(floor.pid, "VmRSS");
watcher.kill("SIGTERM");
floor.kill("SIGTERM");
const code = await watcher.exited;
await floor.exited;
const log = await new Response(watcher.stdout).text();
const stop = log.split("\n").filter(Boolean).map((l) => JSON.parse(l)).find((e) => e.action === "stop");

const mb = (kb: number) => `${(kb / 1024).toFixed(1)} MB`;
console.log(`watch-idle: ${wall.toFixed(0)} s idle on ${SESSIONS} terminal sessions with one standing handler (sweep interval ${values["sweep-interval"]})`);
console.log(`watch-idle: CPU ${cpu.toFixed(2)} s (${((cpu / wall) * 100).toFixed(3)}% of one core); resident ${mb(rss0)} at start, ${mb(rss1)} at end, ${mb(rssMax)} max sampled, ${mb(hwm)} peak (VmHWM)`);
console.log(`watch-idle: ${stop?.passes ?? "?"} delivery passes, ${stop?.sweeps ?? "?"} sweeps; watcher exit ${code}`);
console.log(`watch-idle: floor (a compiled program that only stays alive): CPU ${floorCpu.toFixed(2)} s; resident ${mb(floorRss)} (the watcher at end = ${(rss1 / floorRss).toFixed(2)}× the floor)`);
console.log(
  JSON.stringify({
    bench: "watch-idle",
    seconds: r2(wall),
    sessions: SESSIONS,
    cpu_s: r2(cpu),
    cpu_percent: r2((cpu / wall) * 100),
    rss_start_mb: r2(rss0 / 1024),
    rss_end_mb: r2(rss1 / 1024),
    rss_max_mb: r2(rssMax / 1024),
    hwm_mb: r2(hwm / 1024),
    floor_cpu_s: r2(floorCpu),
    floor_rss_mb: r2(floorRss / 1024),
    rss_ratio: r2(rss1 / floorRss),
    passes: stop?.passes ?? null,
    sweeps: stop?.sweeps ?? null,
    watcher_exit: code,
  }),
);
