// The phantom reaper (SPEC §12.4), run by the watcher: dead supervisors past the grace → failed; sessions with no markers past the threshold → failed.

import { z } from "zod";
import type { Ledger } from "../ledger/ledger.ts";
import { runSessionSweep, type SessionSweepSummary } from "./session-sweep.ts";
import { hostEnv, validateWith, type Sweep, type SweepEnv } from "./sweep.ts";

export interface ReaperOptions {
  /** Seconds since a dead leg's last heartbeat before it is reaped, so a leg in its own teardown is not raced. */
  phantomGraceSeconds: number;
  /** Hours a session with no markers may sit running before it is reaped. */
  phantomHours: number;
  dryRun: boolean;
}

const schema = z.strictObject({
  phantomGraceSeconds: z.number().nonnegative().finite(),
  phantomHours: z.number().positive().finite(),
  dryRun: z.boolean(),
});

export const reaper: Sweep<ReaperOptions, SessionSweepSummary> = {
  name: "reaper",
  defaults: { phantomGraceSeconds: 60, phantomHours: 1, dryRun: false },
  validate(input) {
    return validateWith(schema, { ...reaper.defaults, ...input }, { phantomGraceSeconds: "--phantom-grace", phantomHours: "--phantom-hours", dryRun: "--dry-run" });
  },
  async runOnce(ledger: Ledger, now: number, options: ReaperOptions, env: SweepEnv = hostEnv()) {
    // The empty cgroups of legs that are over (their leftovers gone, or killed here by an earlier pass).
    if (!options.dryRun) env.removeEmptyLegCgroups?.();
    return runSessionSweep(ledger, now, env, {
      name: "reaper",
      actor: "li.watch.reaper",
      dryRun: options.dryRun,
      decide(j) {
        // Includes sessions held open by a running linked session (§8.2 step 5).
        if (j.state === "alive") return { sweep: false, skip: "live" };
        if (j.state === "dead") {
          // A grace of 0 acts on positive death alone, whatever the heartbeat's age (even a clock-skewed future one).
          if (options.phantomGraceSeconds > 0 && j.ageSeconds <= options.phantomGraceSeconds) return { sweep: false, skip: "recent" };
          return {
            sweep: true,
            status: "failed",
            reasonCode: "session.phantom.process_dead",
            reasonSummary: j.orphanCommand ? "the supervisor is gone; its orphaned command was killed" : "the supervisor is gone",
            killOrphan: true,
          };
        }
        if (j.ageSeconds <= options.phantomHours * 3600) return { sweep: false, skip: "recent" };
        return {
          sweep: true,
          status: "failed",
          reasonCode: "session.orphaned.no_process",
          // "unknown" is also a recorded pid li cannot verify (no start ticks, §18): say which, the evidence shows it.
          reasonSummary: `running for ${Math.round(j.ageSeconds)}s with no process markers${j.liveness?.evidence.basis === "probe" ? " li can verify" : ""}`,
          killOrphan: false,
        };
      },
    });
  },
};
