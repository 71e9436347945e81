// Floors the benchmarks measure in their own run, the small statistics they all print, and the timed
// steps that a SQLite bench and its PostgreSQL twin share.

import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Ledger } from "../src/ledger/ledger.ts";
import { lineReader } from "../test/helpers/lines.ts";

/** The value at quantile `q` (0..1) of `xs`; NaN when empty. */
export function quantile(xs: readonly number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? NaN;
}

/** Rounds for the JSON line: two decimals are finer than any machine's noise (three for sub-millisecond figures). */
export const r2 = (x: number) => Math.round(x * 100) / 100;
export const r3 = (x: number) => Math.round(x * 1000) / 1000;

/** Wall clock in nanoseconds, comparable with `date +%s%N` written by another process. */
export const wallNs = () => BigInt(Math.round((performance.timeOrigin + performance.now()) * 1e6));

/**
 * Compiles `source` into a standalone binary `dir/name` with the flags scripts/build.ts gives dist/li
 * (keep the two lists alike): the runtime's own cost, which li's figures are compared with.
 */
export function compileFloor(dir: string, name: string, source: string): string {
  const entry = join(dir, `${name}.ts`);
  const out = join(dir, name);
  writeFileSync(entry, source);
  const flags = ["--compile", "--bytecode", "--compile-jit-policy=1000", "--splitting", "--minify-syntax", "--minify-whitespace", "--format=esm", "--no-compile-autoload-dotenv", "--no-compile-autoload-bunfig"];
  const built = Bun.spawnSync([process.execPath, "build", ...flags, entry, "--outfile", out], { stdout: "ignore", stderr: "pipe" });
  if (built.exitCode !== 0) throw new Error(`could not compile the floor ${name}: ${built.stderr.toString()}`);
  return out;
}

/**
 * The handler floor: the bench itself starts `/bin/sh -c 'date +%s%N >> FILE'` (the handler the notify
 * benches register) and measures start → the wall clock `date` wrote, `n` times. What li adds on
 * top of a handler's own exec is the figure minus this.
 */
export async function handlerSpawnFloorMs(marks: string, n: number): Promise<number[]> {
  const ms: number[] = [];
  for (let i = 0; i < n; i++) {
    const start = wallNs();
    await Bun.spawn(["/bin/sh", "-c", 'date +%s%N >> "$0"', marks], { stdin: "ignore", stdout: "ignore", stderr: "inherit" }).exited;
    const last = readFileSync(marks, "utf8").trim().split("\n").at(-1)!;
    ms.push(Number(BigInt(last) - start) / 1e6);
  }
  return ms;
}

/**
 * What a delivery bench prints of its latencies `ms` (commit → handler started) against the handler floor
 * of the same run (handlerSpawnFloorMs): the two sentences' figures, and the JSON line's.
 */
export function againstHandlerFloor(ms: readonly number[], floor: readonly number[]) {
  const p50 = quantile(ms, 0.5);
  const p95 = quantile(ms, 0.95);
  const max = Math.max(...ms);
  const floorP50 = quantile(floor, 0.5);
  const floorP95 = quantile(floor, 0.95);
  return {
    latency: `p50 ${p50.toFixed(2)} ms, p95 ${p95.toFixed(2)} ms, max ${max.toFixed(2)} ms`,
    floor: `p50 ${floorP50.toFixed(2)} ms, p95 ${floorP95.toFixed(2)} ms (li watch p50 = ${(p50 / floorP50).toFixed(2)}× the floor)`,
    figures: { p50_ms: r2(p50), p95_ms: r2(p95), max_ms: r2(max), floor_p50_ms: r2(floorP50), floor_p95_ms: r2(floorP95), p50_ratio: r2(p50 / floorP50) },
  };
}

/**
 * One timed wake of `li wait`: creates invocation `id`, starts `waitArgv` with `sentinel` and `id` appended
 * (the sentinel, already terminal, prints first: its line proves li wait is blocked on `id`, its wake armed
 * before that check), commits `id` terminal `delayMs` later and returns ms from that commit to `id`'s line.
 */
export async function timedWake(ledger: Ledger, waitArgv: readonly string[], env: Record<string, string | undefined>, sentinel: string, id: string, delayMs: number): Promise<number> {
  await ledger.createEntity("invocation", { id });
  const proc = Bun.spawn([...waitArgv, sentinel, id], { env, stdout: "pipe", stderr: "inherit" });
  const next = lineReader(proc.stdout);
  if (!(await next())?.startsWith(`${sentinel}\t`)) throw new Error("li wait did not report the sentinel");
  await Bun.sleep(delayMs);
  await ledger.updateStatus("invocation", id, { newStatus: "completed", reasonCode: "run.completed.ok" });
  const committed = performance.now();
  const line = await next();
  const seen = performance.now();
  if (!line?.startsWith(`${id}\t`)) throw new Error(`unexpected line ${line}`);
  await proc.exited;
  return seen - committed;
}
