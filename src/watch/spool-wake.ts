// A wake-up for the watcher when a leg of this host spools an outcome (§17): an entry file appearing in
// `$LI_HOME/spool`. The ledger's wake-ups cannot tell of it (the leg could not reach the ledger), and the
// safety poll is tens of seconds (§14 "Many hosts"), so the spool directory is watched (inotify) for it.
// Reservations (`*.reserved-…`) and removals wake nothing; a directory that cannot be watched leaves the
// poll as the net.

import fs from "node:fs";
import path from "node:path";

export interface SpoolWake {
  /** Entries seen arriving so far: read before a pass, so one arriving during it wakes the next. */
  readonly generation: number;
  /** Resolves once an entry arrived after `since` (at once if one already did). */
  changed(since: number): Promise<void>;
  close(): void;
}

/** Watches `dir` (created owner-only when missing); null when it cannot be watched. */
export function watchSpool(dir: string): SpoolWake | null {
  let watcher: fs.FSWatcher;
  try {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    watcher = fs.watch(dir, { persistent: false });
  } catch {
    return null;
  }
  let generation = 0;
  // One promise shared by every wait for the next arrival: a loop waiting a thousand times holds one.
  let next: { promise: Promise<void>; resolve: () => void } | null = null;
  const arrived = () => {
    generation++;
    next?.resolve();
    next = null;
  };
  watcher.on("change", (_event, name) => {
    // A rename into place (an entry written), not out of it (an entry replayed and removed).
    const file = typeof name === "string" ? name : name?.toString();
    if (!file || !file.endsWith(".json") || !fs.existsSync(path.join(dir, file))) return;
    arrived();
  });
  watcher.on("error", () => watcher.close());
  return {
    get generation() {
      return generation;
    },
    changed(since: number): Promise<void> {
      if (generation > since) return Promise.resolve();
      if (next === null) {
        let resolve!: () => void;
        const promise = new Promise<void>((r) => (resolve = r));
        next = { promise, resolve };
      }
      return next.promise;
    },
    close() {
      watcher.close();
    },
  };
}
