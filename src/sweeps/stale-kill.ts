// `li kill --all-stale` (SPEC §12.2): running sessions whose current leg is older than the threshold and whose supervisor is dead → cancelled.

import { z } from "zod";
import type { Ledger } from "../ledger/ledger.ts";
import { runSessionSweep, type SessionSweepSummary } from "./session-sweep.ts";
import { hostEnv, validateWith, type Sweep, type SweepEnv } from "./sweep.ts";

export interface StaleKillOptions {
  thresholdSeconds: number;
  dryRun: boolean;
}

const schema = z.strictObject({ thresholdSeconds: z.number().positive().finite(), dryRun: z.boolean() });

export const staleKill: Sweep<StaleKillOptions, SessionSweepSummary> = {
  name: "kill-all-stale",
  defaults: { thresholdSeconds: 3600, dryRun: false },
  validate(input) {
    return validateWith(schema, { ...staleKill.defaults, ...input }, { thresholdSeconds: "--threshold", dryRun: "--dry-run" });
  },
  runOnce(ledger: Ledger, now: number, options: StaleKillOptions, env: SweepEnv = hostEnv()) {
    return runSessionSweep(ledger, now, env, {
      name: "kill-all-stale",
      actor: "li.kill.all_stale",
      dryRun: options.dryRun,
      decide(j) {
        // Another host's pids mean nothing here: `li kill --all-stale` runs on the host that owns the leg.
        if (j.remote) return { sweep: false, skip: "remote" };
        if (j.state === "alive") return { sweep: false, skip: "live" };
        if (j.ageSeconds <= options.thresholdSeconds) return { sweep: false, skip: "recent" };
        // No markers: nothing is known dead; only the doctor's and the reaper's age rules act on it.
        if (j.state === "unknown") return { sweep: false, skip: "unknown" };
        return {
          sweep: true,
          status: "cancelled",
          reasonCode: "run.cancelled.stale_auto",
          reasonSummary: `supervisor gone; leg stale for ${Math.round(j.ageSeconds)}s`,
          killOrphan: true,
        };
      },
    });
  },
};

/** The summary line that ends `li kill --all-stale`. */
export function staleKillLine(s: SessionSweepSummary): string {
  return `running=${s.running}, killed=${s.swept} → cancelled, skipped_recent=${s.skipped_recent}, skipped_live=${s.skipped_live}, skipped_remote=${s.skipped_remote}, skipped_no_markers=${s.skipped_unknown}`;
}
