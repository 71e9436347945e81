// The one way a test waits: a condition polled until a deadline, failing loudly with what was awaited.
// Never a fixed sleep that stands for "until X happened"; never a loop that gives up silently.
// Also the one way a test names a process: a pid is validated (positive, ours) before anything signals it.

import { afterEach } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";

export interface UntilOptions {
  /** How long the condition may take before the test fails (default 20 s: a loaded 2-core machine). */
  timeoutMs?: number;
  /** Pause between probes (default 10 ms). */
  intervalMs?: number;
}

/** Thrown by a probe when what it awaits can no longer happen (the process that would do it exited): fails at once. */
export class NeverHappens extends Error {}

/**
 * Polls `probe` until it returns a truthy value and returns that value. A probe that throws counts as
 * "not yet" (a database still being created, a file half written); the last error is named at the deadline.
 * A probe that throws NeverHappens fails the wait at once.
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
      if (error instanceof NeverHappens) throw new Error(`waiting for ${what}: ${error.message}`);
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
 * Processes this test run starts carry this variable, so a process that has left our tree (a detached
 * supervisor, a reparented grandchild) can still be recognised as ours from its /proc environ. It is set
 * in process.env here; liEnv copies process.env, li passes its environment on to legs and supervisors.
 * Bun.spawn without `env` uses the environment the runner started with, not process.env: a test whose
 * child may be orphaned passes `env: process.env` (validPid says so loudly when one forgets).
 */
export const OWNER_VARIABLE = "LITEST_RUN_OWNER";
const OWNER_TOKEN = (process.env[OWNER_VARIABLE] ??= `${process.pid}-${crypto.randomUUID()}`);
/** The variable for environments built from scratch rather than from process.env. */
export const ownerEnv = (): Record<string, string> => ({ [OWNER_VARIABLE]: OWNER_TOKEN });

function statTail(pid: number): string | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8");
    return text.slice(text.lastIndexOf(")") + 2);
  } catch {
    return null;
  }
}

/** The pids /proc shows now (every process of ours; others' only as far as /proc lets us see them). */
export function visiblePids(): number[] {
  return readdirSync("/proc").filter((name) => /^[0-9]+$/.test(name)).map(Number);
}

/** The argv `pid` runs with, from /proc/PID/cmdline, or null when no such process is visible. */
export function commandLine(pid: number): string[] | null {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "latin1").split("\0").slice(0, -1);
  } catch {
    return null;
  }
}

/** The kernel's state letter (R, S, Z, …) or null when no such process exists. */
export function processState(pid: number): string | null {
  return statTail(pid)?.[0] ?? null;
}

/**
 * true while the process runs. A zombie is not alive: pid 1 does not reap here, so a killed orphan
 * stays in state Z (it answers kill(pid, 0) but will never run again).
 */
export function isAlive(pid: number): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0) throw new Error(`isAlive: ${pid} is not a positive pid`);
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  const state = processState(pid);
  return state !== null && state !== "Z" && state !== "X" && state !== "x";
}

/** Waits until the process is gone (exited, killed, or a zombie nobody will reap). */
export async function untilGone(pid: number, what = `process ${pid} to be gone`, options: UntilOptions = {}): Promise<void> {
  await until(what, () => !isAlive(pid), options);
}

/**
 * Waits until `pid` has finished exec'ing `program`: its name (/proc/PID/comm) is the program's and its
 * environment is mapped. A fixture that writes its pid and then execs (forever, ignore-sigterm) announces
 * itself before that exec: a look at its /proc/PID/environ made then can land inside the execve, where the
 * kernel shows the new name first and an empty environment until the new image's stack is set up (measured:
 * about 1 in 300 reads right after the pid file appeared, under load).
 */
export async function untilExeced(pid: number, program: string, options: UntilOptions = {}): Promise<void> {
  await until(`process ${pid} to finish its exec of ${program}`, () => {
    if (!isAlive(pid)) throw new NeverHappens(`process ${pid} is gone`);
    return readFileSync(`/proc/${pid}/comm`, "utf8").trim() === program && readFileSync(`/proc/${pid}/environ`).length > 0;
  }, options);
}

function isDescendantOfUs(pid: number): boolean {
  let current = pid;
  for (let hops = 0; hops < 64 && current > 1; hops++) {
    if (current === process.pid) return true;
    const tail = statTail(current);
    if (!tail) return false;
    current = Number(tail.split(" ")[1]);
  }
  return false;
}

/** The kernel marks its own threads with PF_KTHREAD in /proc/PID/stat's flags: they have no environment at all. */
const PF_KTHREAD = 0x00200000;
/** How long an empty /proc/PID/environ may stay empty before the process counts as having none. */
const EXEC_WINDOW_MS = 2_000;

/**
 * The process's environment as the kernel shows it, re-read while it reads empty. /proc/PID/environ is
 * empty for a moment inside execve (the new image's environment is not mapped yet, or the file was
 * opened on the image being replaced): measured here, a tight probe of `sh -c 'exec sleep 1'` read it
 * empty in about half its reads until the exec finished. A fixture that writes its pid and then execs
 * (`forever`: `exec sleep`), or a command whose pid li records as soon as it spawned, is often caught
 * there under load; read once, our own process looked like a stranger. Every process this run starts
 * carries the owner token, so an empty read is "not yet", never "ours": the check is as strict as before.
 * The re-read stops when the process is gone or replaced (its start time changed: a recycled pid).
 */
function environOf(pid: number): string[] | null {
  const first = statTail(pid)?.split(" ");
  if (!first || (Number(first[6]) & PF_KTHREAD) !== 0) return null;
  // Field 22 (start time): the same process throughout, not a recycled pid.
  const startTime = first[19];
  const stillRunning = () => {
    const now = statTail(pid)?.split(" ");
    return now !== undefined && now[19] === startTime && !["Z", "X", "x"].includes(now[0]!);
  };
  const deadline = Date.now() + EXEC_WINDOW_MS;
  for (;;) {
    let text: string;
    try {
      text = readFileSync(`/proc/${pid}/environ`, "latin1");
    } catch {
      return null;
    }
    if (text.length > 0) return stillRunning() ? text.split("\0") : null;
    // A zombie's environ is empty for good; so is one of a process that was replaced.
    if (Date.now() >= deadline || !stillRunning()) return null;
    Bun.sleepSync(1);
  }
}

function carriesOurToken(pid: number): boolean {
  return environOf(pid)?.includes(`${OWNER_VARIABLE}=${OWNER_TOKEN}`) ?? false;
}

/** true when this test run started the process: it descends from us, or its environment carries our token. */
export function isOurs(pid: number): boolean {
  return isDescendantOfUs(pid) || carriesOurToken(pid);
}

/**
 * A pid that is safe to signal: a positive integer naming a live process this test run started. Anything
 * else (an empty or half-written file, 0, a negative number, a pid that is gone, a stranger's process)
 * throws, so a test never signals pid 0 (its own process group), -1 (every process it may signal) or a
 * recycled pid.
 */
export function validPid(raw: string | number | null | undefined, what = "pid"): number {
  const text = String(raw ?? "").trim();
  if (!/^[1-9][0-9]*$/.test(text)) throw new Error(`${what} is not a positive integer: ${JSON.stringify(text)}`);
  const pid = Number(text);
  if (!Number.isSafeInteger(pid)) throw new Error(`${what} is out of range: ${text}`);
  if (!isAlive(pid)) throw new Error(`${what} ${pid} is not a live process`);
  if (!isOurs(pid)) throw new Error(`${what} ${pid} is not a process this test run started`);
  return pid;
}

/**
 * The pid a file holds now, written whole (for a file that must already exist, e.g. after the process that
 * wrote it has exited); throws naming the file otherwise. No liveness check: the process may be gone.
 */
export function pidInFile(file: string, what = `the pid in ${file}`): number {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch {
    throw new Error(`${what}: ${file} was never written`);
  }
  if (!/^[1-9][0-9]*\s*$/.test(text)) throw new Error(`${what}: ${file} holds no whole positive pid: ${JSON.stringify(text)}`);
  return Number(text.trim());
}

/** Waits until `file` holds a valid pid (written whole, live, ours) and returns it. */
export async function pidFromFile(file: string, what = `the pid in ${file}`, options: UntilOptions = {}): Promise<number> {
  return until(what, () => {
    const text = readFileSync(file, "utf8");
    if (!/^[1-9][0-9]*\s*$/.test(text)) return null;
    return validPid(text, what);
  }, options);
}

/**
 * Sends `signal` to a validated pid, or with `group` to its process group (only when the pid leads one:
 * a group id is a pid, so -pid can never mean "every process" or "our own group").
 */
export function signalPid(pid: number, signal: NodeJS.Signals, options: { group?: boolean; what?: string } = {}): void {
  const what = options.what ?? `process ${pid}`;
  validPid(pid, what);
  if (options.group) {
    const pgrp = Number(statTail(pid)?.split(" ")[2]);
    if (pgrp !== pid) throw new Error(`${what} ${pid} does not lead its own process group (group ${pgrp})`);
    process.kill(-pid, signal);
  } else {
    process.kill(pid, signal);
  }
}

/** Asserts that intervals overlapped: every contender entered before any left. Returns the overlap in ms. */
export function overlapMs(intervals: Array<{ enteredAt: number; leftAt: number }>): number {
  if (intervals.length < 2) throw new Error("an overlap needs at least two contenders");
  const latestEntry = Math.max(...intervals.map((i) => i.enteredAt));
  const earliestExit = Math.min(...intervals.map((i) => i.leftAt));
  return earliestExit - latestEntry;
}

/**
 * Processes a test file may leave running (a stopped supervisor, its command): push them on the list
 * returned here and they are SIGKILLed after each test whatever its outcome (each re-validated first).
 */
export function killedAfterEachTest(): Array<{ pid: number; group: boolean }> {
  const leftRunning: Array<{ pid: number; group: boolean }> = [];
  afterEach(() => {
    for (const { pid, group } of leftRunning.splice(0)) {
      try {
        if (isAlive(pid)) signalPid(pid, "SIGKILL", { group, what: "a process the test left running" });
      } catch {
        // Gone meanwhile (signalPid re-validates it).
      }
    }
  });
  return leftRunning;
}
