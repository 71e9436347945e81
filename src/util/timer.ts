// The one timer for DURATION values (SPEC §18): a delay longer than setTimeout can hold is re-armed in steps, never truncated.

/** The longest delay one setTimeout holds (2^31−1 ms, 24.8 days); a longer one would fire after 1 ms. */
export const MAX_TIMER_STEP_MS = 2 ** 31 - 1;

export interface TimerOptions {
  /** The longest single setTimeout; tests shrink it to see the re-arming without waiting weeks. */
  maxStepMs?: number;
  /** A monotonic clock in milliseconds; the deadline is measured on it, so the steps do not drift. */
  clockMs?: () => number;
}

/**
 * Calls `onFire` once, `delayMs` from now (a negative or non-finite delay: at once, on the next tick;
 * an infinite one: never). Returns the disarm function; calling it after the timer fired does nothing.
 */
export function armTimer(delayMs: number, onFire: () => void, options: TimerOptions = {}): () => void {
  const step = options.maxStepMs ?? MAX_TIMER_STEP_MS;
  const clock = options.clockMs ?? (() => performance.now());
  if (delayMs === Infinity) return () => {};
  const deadline = clock() + (Number.isFinite(delayMs) ? Math.max(0, delayMs) : 0);
  let timer: ReturnType<typeof setTimeout> | undefined;
  let armed = true;
  const arm = () => {
    const left = deadline - clock();
    if (left <= 0) {
      armed = false;
      onFire();
      return;
    }
    timer = setTimeout(arm, Math.min(step, Math.ceil(left)));
  };
  timer = setTimeout(arm, Math.min(step, Math.max(0, Math.ceil(deadline - clock()))));
  return () => {
    if (!armed) return;
    armed = false;
    clearTimeout(timer);
  };
}

/** Resolves after `delayMs` (re-armed like armTimer). */
export function delay(delayMs: number, options: TimerOptions = {}): Promise<void> {
  return new Promise((resolve) => armTimer(delayMs, resolve, options));
}
