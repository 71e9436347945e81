// Waiting (§11): resolve ids, report each target as it reaches a terminal status, and decide the exit code.
// A service: it never prints; the command renders each outcome through `onResult` and the problems it returns.

import { isTerminal, type EntityKind } from "../lifecycle/policy.ts";
import type { LedgerReads } from "../ledger/reads.ts";
import type { ChangeWake } from "../ledger/wake.ts";
import { resolveIn, WAIT_LOOKUP_ORDER, type LookupMatch } from "../ledger/resolve.ts";
import { ExitCode, LedgerUnavailableError } from "../util/errors.ts";
import { armTimer } from "../util/timer.ts";
import { toOutcome, type WaitOutcome } from "./line.ts";
import { startUpDone } from "../util/jit.ts";

export interface WaitTarget {
  kind: EntityKind;
  id: string;
  input: string;
}

export type WaitProblem = { input: string; problem: "not_found" } | { input: string; problem: "ambiguous"; matches: LookupMatch[] };

export interface Resolved {
  targets: WaitTarget[];
  problems: WaitProblem[];
}

/** Resolves every id (§11 order); two ids naming the same record wait on it once. */
export async function resolveTargets(reads: LedgerReads, inputs: readonly string[]): Promise<Resolved> {
  const targets: WaitTarget[] = [];
  const problems: WaitProblem[] = [];
  const seen = new Set<string>();
  for (const input of inputs) {
    const r = await resolveIn(reads, input, WAIT_LOOKUP_ORDER);
    if ("notFound" in r) problems.push({ input, problem: "not_found" });
    else if ("ambiguous" in r) problems.push({ input, problem: "ambiguous", matches: r.ambiguous });
    else {
      const key = `${r.found.kind}\0${r.found.id}`;
      if (seen.has(key)) continue;
      seen.add(key);
      targets.push({ kind: r.found.kind, id: r.found.id, input });
    }
  }
  return { targets, problems };
}

export type WaitEnd = "done" | "interrupted" | "timed_out";

export interface WaitOptions {
  reads: LedgerReads;
  targets: readonly WaitTarget[];
  /** Arms the change signal; called only when a target is still running after the first check (then checked again). */
  arm: () => ChangeWake | Promise<ChangeWake>;
  /** The safety poll (§11; default 1 s). */
  intervalMs: number;
  /** Give up after this many milliseconds (`--timeout`). */
  timeoutMs?: number;
  /** Aborted on SIGINT/SIGTERM. */
  signal?: AbortSignal;
  onResult: (outcome: WaitOutcome) => void;
  /** Monotonic milliseconds; injectable for tests. */
  clock?: () => number;
  /**
   * Told once per outage when the ledger stops answering while targets are pending (a PostgreSQL server
   * restarting, SQLite busy past its timeout); the wait goes on and looks again at the next wake-up or poll.
   */
  onUnreachable?: (error: LedgerUnavailableError) => void;
}

/**
 * `work`, unless `ms` pass first (null then; `work` may still settle later, unobserved). A ledger call
 * that hangs on a dead connection is bounded by its own deadline, which may be longer than --timeout
 * (§17 item 1: --timeout is honoured during an outage).
 */
export async function withinMs<T>(work: Promise<T>, ms: number): Promise<{ value: T } | null> {
  if (ms === Infinity) return { value: await work };
  let disarm = () => {};
  const expired = new Promise<null>((resolve) => {
    disarm = armTimer(ms, () => resolve(null));
  });
  try {
    return await Promise.race([work.then((value) => ({ value })), expired]);
  } finally {
    disarm();
  }
}

/** Blocks until every target is terminal (or gone), the deadline passes, or the signal aborts. */
export async function waitForTerminal(options: WaitOptions): Promise<{ outcomes: WaitOutcome[]; end: WaitEnd }> {
  const { reads, signal, onResult } = options;
  const clock = options.clock ?? (() => performance.now());
  const deadline = options.timeoutMs === undefined ? Infinity : clock() + options.timeoutMs;
  const pending = new Map(options.targets.map((t) => [`${t.kind}\0${t.id}`, t]));
  const outcomes: WaitOutcome[] = [];
  const aborted = new Promise<void>((resolve) => {
    if (signal?.aborted) resolve();
    signal?.addEventListener("abort", () => resolve(), { once: true });
  });

  /** Set once the wait has ended: a read still in flight then reports nothing. */
  let over = false;
  /** Reads every pending target in input order and reports those that finished. */
  const check = async () => {
    for (const [key, target] of pending) {
      const state = await reads.waitState(target.kind, target.id);
      if (over) return;
      if (state && !isTerminal(target.kind, state.status)) continue;
      pending.delete(key);
      const outcome = toOutcome(target, state);
      outcomes.push(outcome);
      onResult(outcome);
    }
  };

  const first = await withinMs(check(), deadline - clock());
  if (first === null) {
    over = true;
    return { outcomes, end: "timed_out" };
  }
  if (pending.size === 0) return { outcomes, end: "done" };
  // Arm, then check again (STACK.md): a commit between the first check and arming is not missed.
  const wake = await options.arm();
  try {
    return await watchPending(wake);
  } finally {
    over = true;
    wake.close();
  }

  async function watchPending(wake: ChangeWake): Promise<{ outcomes: WaitOutcome[]; end: WaitEnd }> {
    startUpDone(); // li wait stays until its targets end
    let generation = wake.generation;
    // null: not read yet, or the ledger stopped answering (then the next look re-checks whatever woke it).
    let version: number | null = null;
    let outage = false;
    const look = async (woke: boolean): Promise<void> => {
      try {
        const counter = await reads.changeCounter();
        // A file event without a committed change (the first write of a commit): wait for the trailing re-check.
        if (woke && counter === version) return;
        version = counter;
        await check();
        outage = false;
      } catch (error) {
        // A ledger that stopped answering is waited for, not given up on: a reconnect wakes the wait again.
        if (!(error instanceof LedgerUnavailableError) || !error.unreachable) throw error;
        version = null;
        // A look given up at the deadline says nothing after the wait's own last word.
        if (!outage && !over) options.onUnreachable?.(error);
        outage = true;
      }
    };
    await withinMs(look(false), deadline - clock());
    while (pending.size > 0) {
      if (signal?.aborted) return { outcomes, end: "interrupted" };
      const left = deadline - clock();
      if (left <= 0) return { outcomes, end: "timed_out" };
      await Promise.race([wake.changed(generation, Math.min(options.intervalMs, left)), aborted]);
      if (signal?.aborted) return { outcomes, end: "interrupted" };
      const woke = wake.generation !== generation;
      generation = wake.generation;
      // A look stuck on a dead connection does not hold the wait past its --timeout.
      await withinMs(look(woke), deadline - clock());
    }
    return { outcomes, end: "done" };
  }
}

/** §11 exit precedence: 3 interrupted or timed out > 2 not found/unknown/ambiguous > 1 unsuccessful > 0. */
export function waitExitCode(end: WaitEnd, problems: readonly WaitProblem[], outcomes: readonly WaitOutcome[]): number {
  if (end !== "done") return ExitCode.interrupted;
  if (problems.length > 0 || outcomes.some((o) => o.status === "unknown")) return ExitCode.usage;
  if (outcomes.some((o) => !o.success)) return ExitCode.failure;
  return ExitCode.ok;
}
