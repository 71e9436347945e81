// How the watcher reports the ledger's failures (§17): the failure that starts an outage is logged, the
// ones after it are only counted, and the end is logged once, when every step that failed has run
// again — so a watcher cut off for an hour logs two lines, not one per pass.

import type { WatchLog } from "./log.ts";

export class OutageLog {
  /** The steps (`deliver`, `reap`, …) whose last run failed on the ledger. */
  private readonly failing = new Set<string>();
  private startedMs = 0;
  private unlogged = 0;

  /** `clockMs`: monotonic milliseconds, for how long the outage lasted. */
  constructor(
    private readonly log: WatchLog,
    private readonly clockMs: () => number,
  ) {}

  /**
   * Step `during` failed on the ledger: logged (as `error`) when no other step is failing, else counted.
   * `sinceMs`: when the pass that met it began (the outage started no earlier), so `down_seconds` counts the
   * time a call spent waiting on a silent link before it failed too.
   */
  failed(during: string, message: string, sinceMs: number = this.clockMs()): void {
    if (this.failing.size === 0) {
      this.startedMs = sinceMs;
      this.unlogged = 0;
      this.log({ action: "error", during, message });
    } else this.unlogged++;
    this.failing.add(during);
  }

  /**
   * Step `during` ran to its end, and with it every part of it (`during:PART`, a part that failed on its
   * own). A step's own success, not any success: on SQLite a held write lock or a full disk still lets
   * reads through, so a pass that only read proves nothing about the step that wrote.
   */
  succeeded(during: string): void {
    let cleared = this.failing.delete(during);
    for (const step of this.failing) {
      if (step.startsWith(`${during}:`)) cleared = this.failing.delete(step) || cleared;
    }
    if (!cleared || this.failing.size > 0) return;
    this.log({ action: "ledger_back", down_seconds: Math.round((this.clockMs() - this.startedMs) / 1000), errors_not_logged: this.unlogged });
  }
}
