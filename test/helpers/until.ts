// The one way a test waits: a condition polled until a deadline, failing loudly with what was awaited.
// Never a fixed sleep that stands for "until X happened"; never a loop that gives up silently.

import { readFileSync } from "node:fs";

export interface UntilOptions {
  /** How long the condition may take before the test fails (default 20 s: a loaded 2-core machine). */
  timeoutMs?: number;
  /** Pause between probes (default 10 ms). */
  intervalMs?: number;
}

/**
 * Polls `probe` until it returns a truthy value and returns that value. A probe that throws counts as
 * "not yet" (a database still being created, a file half written); the last error is named at the deadline.
 */
export async function until<T>(what: string, probe: () => T | null | undefined | false | Promise<T | null | undefined | false>, options: UntilOptions = {}): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 20_000;
  const intervalMs = options.intervalMs ?? 10;
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value) return value;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() >= deadline) {
      const cause = lastError instanceof Error ? ` (last error: ${lastError.message})` : "";
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${cause}`);
    }
    await Bun.sleep(intervalMs);
  }
}

/**
 * A pid that is safe to signal: a positive integer naming a live process. Anything else (an empty or
 * half-written file, 0, a negative number, a pid that is gone) throws, so a test never signals pid 0
 * (its own process group) or -1 (every process it may signal).
 */
export function validPid(raw: string | number | null | undefined, what = "pid"): number {
  const text = String(raw ?? "").trim();
  if (!/^[1-9][0-9]*$/.test(text)) throw new Error(`${what} is not a positive integer: ${JSON.stringify(text)}`);
  const pid = Number(text);
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EPERM") throw new Error(`${what} ${pid} is not a live process`);
  }
  return pid;
}

/** Waits until `file` holds a valid pid (written whole) and returns it. */
export async function pidFromFile(file: string, what = `the pid in ${file}`, options: UntilOptions = {}): Promise<number> {
  return until(what, () => {
    const text = readFileSync(file, "utf8");
    if (!/^[1-9][0-9]*\s*$/.test(text)) return null;
    return validPid(text, what);
  }, options);
}

/** Asserts that intervals overlapped: every contender entered before any left. Returns the overlap in ms. */
export function overlapMs(intervals: Array<{ enteredAt: number; leftAt: number }>): number {
  if (intervals.length < 2) throw new Error("an overlap needs at least two contenders");
  const latestEntry = Math.max(...intervals.map((i) => i.enteredAt));
  const earliestExit = Math.min(...intervals.map((i) => i.leftAt));
  return earliestExit - latestEntry;
}
