// A wake on files of one directory: fs.watch on the directory (it also sees a file that does not exist
// yet or is replaced), filtered to the names given, plus trailing re-checks after the last event
// (STACK.md "Watching for commits": the first write of a commit fires before readers can see it).
// SQLite's ledger wake (sqlite/wake.ts) and `li logs -f`'s stream files both use it.

import { watch, type FSWatcher } from "node:fs";
import { ChangeSignal, type ChangeWake, type WakeOptions } from "./wake.ts";

/**
 * When the state is checked again after the last event. SQLite's writer sends the commit's last WAL frame
 * (the event) and only then publishes it in the shared index; a writer descheduled in between (a loaded
 * machine, the woken reader taking its core) makes the commit visible after the early re-checks, and
 * nothing fires when it does. The later ones keep that from costing a waiter its whole safety poll, which
 * `--interval` may set to hours. Each costs a waiter one cheap read.
 */
export const TRAILING_RECHECKS_MS: readonly number[] = [3, 25, 100, 400];

/** Falls back to polling-only when the directory cannot be watched (the caller's safety poll still runs). */
export function watchFilesIn(dir: string, fileNames: readonly string[], options: WakeOptions = {}): ChangeWake {
  const trailing = options.trailingMs ?? TRAILING_RECHECKS_MS;
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
    get via() {
      return watcher !== null ? ("files" as const) : ("poll" as const);
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
