// Wake-ups on ledger changes, declared once for every backend (SQLite: a watch on the database files,
// sqlite/wake.ts; PostgreSQL: LISTEN). Waiters re-check the state on every wake and keep their safety poll.
// No `node:*` imports: `li wait`'s cold path may load it.

import { armTimer } from "../util/timer.ts";

/** A change signal: read `generation` before checking state, then wait for it to move. */
export interface ChangeWake {
  /** Increases on every possible change. */
  readonly generation: number;
  /** True when change events arrive; false when only the caller's polling will notice changes. */
  readonly watching: boolean;
  /** How changes arrive, for log lines: a file watch, LISTEN/NOTIFY, or only the caller's poll. */
  readonly via: "files" | "listen" | "poll";
  /** Resolves when `generation` differs from `since`, or after `timeoutMs`, whichever is first. */
  changed(since: number, timeoutMs: number): Promise<void>;
  close(): void;
}

export interface WakeOptions {
  /** Delays after the last event at which the state is checked again (each new event restarts them). */
  trailingMs?: readonly number[];
}

/** `LI_WATCH_FILES=0`: wake-ups off, the safety poll is all there is (e.g. on network filesystems). */
export function wakeUpsDisabled(env: Readonly<Record<string, string | undefined>> = process.env): boolean {
  return env.LI_WATCH_FILES === "0";
}

/** A LISTEN's state as a watcher logs it: down (with why) or back. */
export type ListenState = { listening: true } | { listening: false; message: string };

/** Bookkeeping shared by every wake (file watch, polling-only, PostgreSQL's LISTEN). */
export class ChangeSignal {
  generation = 0;
  private waiters = new Set<() => void>();

  bump(): void {
    this.generation++;
    const waiters = this.waiters;
    this.waiters = new Set();
    for (const wake of waiters) wake();
  }

  changed(since: number, timeoutMs: number): Promise<void> {
    if (this.generation !== since) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        disarm();
        this.waiters.delete(done);
        resolve();
      };
      // A `li wait --interval` or watcher wait may be any DURATION (up to 365 d): armTimer re-arms past setTimeout's limit.
      const disarm = armTimer(timeoutMs, done);
      this.waiters.add(done);
    });
  }

  close(): void {
    for (const wake of [...this.waiters]) wake();
  }
}

/** A wake that never fires on its own: the caller's interval poll is all there is. */
export function pollingOnly(): ChangeWake {
  const signal = new ChangeSignal();
  return {
    get generation() {
      return signal.generation;
    },
    watching: false,
    via: "poll",
    changed: (since, ms) => signal.changed(since, ms),
    close: () => signal.close(),
  };
}
