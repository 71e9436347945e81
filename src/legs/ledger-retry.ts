// Retrying an unreachable ledger for a bounded time (SPEC §17): the final write, and a foreground leg's setup.

/** First pause between attempts; each further pause doubles, up to the cap. */
const FIRST_PAUSE_MS = 250;
const MAX_PAUSE_MS = 10_000;

/**
 * A retried write waits at most this long for another process's lock, and never longer than what is
 * left of the retry budget: on SQLite an unbounded attempt is a whole busy timeout and its eight retries.
 */
export const RETRY_LOCK_WAIT_MS = 1000;

/** How long one retried attempt may wait for a lock when `leftMs` of the budget remain. */
export function retryLockWaitMs(leftMs: number): number {
  return Math.max(0, Math.min(RETRY_LOCK_WAIT_MS, Math.floor(leftMs)));
}

/**
 * How long the first attempt of a write retried for `budgetMs` may wait for a lock: the whole budget
 * (never more than one busy timeout: the backend caps it), or one busy timeout when there is no budget
 * (`--ledger-retry 0`). Never the busy timeout's own retries, eight of them on SQLite (§17: an attempt is
 * cut to what is left of the deadline).
 */
export function firstLockWaitMs(budgetMs: number): number {
  return budgetMs > 0 ? Math.floor(budgetMs) : Infinity;
}

export interface RetryOptions {
  /** How long to keep trying, in seconds (0: one attempt). */
  seconds: number;
  /** Monotonic milliseconds (injectable for tests). */
  clockMs?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

export type Attempt<T> = { ok: true; value: T } | { ok: false; retry: boolean; error: unknown };

/**
 * Calls `attempt` until it succeeds, answers "do not retry" (a refusal, §17), or the time is up; with
 * backoff between attempts, never past the deadline. Each attempt is told how many milliseconds of the
 * budget are left, so it can bound its own waits by them. Returns the last attempt.
 */
export async function retryUnreachable<T>(attempt: (leftMs: number) => Promise<Attempt<T>>, o: RetryOptions): Promise<Attempt<T>> {
  const clockMs = o.clockMs ?? (() => performance.now());
  const sleep = o.sleep ?? ((ms: number) => Bun.sleep(ms));
  const deadline = clockMs() + o.seconds * 1000;
  let pause = FIRST_PAUSE_MS;
  for (;;) {
    const result = await attempt(Math.max(0, deadline - clockMs()));
    if (result.ok || !result.retry) return result;
    const left = deadline - clockMs();
    if (left <= 0) return result;
    await sleep(Math.min(pause, left));
    pause = Math.min(pause * 2, MAX_PAUSE_MS);
  }
}
