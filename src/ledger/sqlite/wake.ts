// Wakes a waiter within milliseconds of a commit to a SQLite ledger: fs.watch on the database's
// directory (the -wal file comes and goes, so the directory is what can be watched), filtered to the
// database file and its -wal, plus trailing re-checks after the last event (STACK.md "Watching for
// commits": the first write of a commit fires before readers can see it). `li watch` reuses it.

import { watch, type FSWatcher } from "node:fs";
import { basename, dirname } from "node:path";
import { armTimer } from "../../util/timer.ts";

/** A change signal: read `generation` before checking state, then wait for it to move. */
export interface ChangeWake {
  /** Increases on every possible change. */
  readonly generation: number;
  /** True when file events arrive; false when only the caller's polling will notice changes. */
  readonly watching: boolean;
  /** Resolves when `generation` differs from `since`, or after `timeoutMs`, whichever is first. */
  changed(since: number, timeoutMs: number): Promise<void>;
  close(): void;
}

export interface WakeOptions {
  /** Delays after the last event at which the state is checked again (each new event restarts them). */
  trailingMs?: readonly number[];
}

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
    changed: (since, ms) => signal.changed(since, ms),
    close: () => signal.close(),
  };
}

/**
 * Arms a watcher on `dbPath`'s directory. Create it before the first check of the state, so a commit
 * between that check and the first wait is not missed. Falls back to polling-only when the directory
 * cannot be watched (the safety poll still runs).
 */
export function watchSqliteFile(dbPath: string, options: WakeOptions = {}): ChangeWake {
  return watchFilesIn(dirname(dbPath), [basename(dbPath), `${basename(dbPath)}-wal`], options);
}

/**
 * The same wake for any files of one directory (`li logs -f` follows a leg's stream file with it):
 * watching the directory also sees a file that does not exist yet or is replaced.
 */
export function watchFilesIn(dir: string, fileNames: readonly string[], options: WakeOptions = {}): ChangeWake {
  const trailing = options.trailingMs ?? [3, 25];
  const names = new Set(fileNames);
  const signal = new ChangeSignal();
  let timers: ReturnType<typeof setTimeout>[] = [];
  let watcher: FSWatcher | null = null;
  const onEvent = (_event: string, filename: string | Buffer | null) => {
    if (filename !== null && !names.has(String(filename))) return;
    signal.bump();
    for (const t of timers) clearTimeout(t);
    timers = trailing.map((ms) => setTimeout(() => signal.bump(), ms));
  };
  try {
    watcher = watch(dir, { persistent: true }, onEvent);
    watcher.on("error", () => {
      watcher?.close();
      watcher = null;
    });
  } catch {
    watcher = null;
  }
  return {
    get generation() {
      return signal.generation;
    },
    get watching() {
      return watcher !== null;
    },
    changed: (since, ms) => signal.changed(since, ms),
    close: () => {
      watcher?.close();
      watcher = null;
      for (const t of timers) clearTimeout(t);
      signal.close();
    },
  };
}
