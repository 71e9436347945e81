// Races between real processes that prove they raced. A contender (a worker script) opens what it needs,
// says it is ready, waits at the start line, and records when it entered and left the contested section;
// the test draws the start line only once every contender is ready, may hold them inside the section until
// all have entered (the release), and fails unless the recorded intervals overlapped.
//
// Files in the race directory: ready.<pid> and entered.<pid> (written by contenders), start and release
// (written by the test).

import { existsSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { NeverHappens, overlapMs, until } from "./until.ts";

export interface Interval {
  enteredAt: number;
  leftAt: number;
}

/** Epoch milliseconds with sub-millisecond precision, comparable across processes. */
export const raceClock = (): number => performance.timeOrigin + performance.now();

/** Contender side: ready (after the caller's own set-up), then waits for the start line. */
export async function atStartLine(dir: string): Promise<void> {
  writeFileSync(join(dir, `ready.${process.pid}`), "");
  // A 1 ms poll keeps the contenders' entries close together.
  await until("the start line", () => existsSync(join(dir, "start")), { intervalMs: 1 });
}

/** Contender side: entering the contested section; returns the entry time. */
export function enter(dir: string): number {
  const at = raceClock();
  writeFileSync(join(dir, `entered.${process.pid}`), "");
  return at;
}

/** Contender side (or a fixture it starts): held inside the section until every contender has entered. */
export async function heldUntilRelease(dir: string): Promise<void> {
  await until("the release (every contender entered)", () => existsSync(join(dir, "release")), { intervalMs: 1 });
}

const count = (dir: string, prefix: string) => readdirSync(dir).filter((f) => f.startsWith(`${prefix}.`)).length;

/**
 * Test side: waits until every contender is ready, draws the start line, waits until every contender has
 * entered, then writes the release. A contender that exits before that fails the wait at once.
 */
export async function runRace(dir: string, procs: Subprocess<any, "pipe", "pipe">[]): Promise<void> {
  const all = async (prefix: string) => {
    if (count(dir, prefix) === procs.length) return true;
    const gone = procs.find((p) => p.exitCode !== null || p.signalCode !== null);
    if (gone) throw new NeverHappens(`a contender exited (${gone.exitCode ?? gone.signalCode}): ${await new Response(gone.stderr).text()}`);
    return false;
  };
  await until(`all ${procs.length} contenders to be ready`, () => all("ready"));
  writeFileSync(join(dir, "start"), "go");
  await until(`all ${procs.length} contenders to enter`, () => all("entered"));
  writeFileSync(join(dir, "release"), "");
}

/**
 * Fails unless every contender's interval overlapped another's: a contender that met only another's
 * held claim may leave at once, so not all need share one instant, but none may have raced nobody.
 */
export function assertEachOverlapped(intervals: Interval[]): void {
  for (const [i, mine] of intervals.entries()) {
    const best = Math.max(...intervals.filter((_, j) => j !== i).map((other) => overlapMs([mine, other])));
    if (!(best > 0)) throw new Error(`contender ${i} raced nobody (best overlap ${best} ms): ${JSON.stringify(intervals)}`);
  }
}
