// A wake on files of one directory: fs.watch on the directory (it also sees a file that does not exist
// yet or is replaced), filtered to the names given, plus trailing re-checks after the last event
// (STACK.md "Watching for commits": the first write of a commit fires before readers can see it).
// SQLite's ledger wake (sqlite/wake.ts) and `li logs -f`'s stream files both use it.

import { watch, type FSWatcher } from "node:fs";
import { ChangeSignal, type ChangeWake, type WakeOptions } from "./wake.ts";

/** Falls back to polling-only when the directory cannot be watched (the caller's safety poll still runs). */
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
