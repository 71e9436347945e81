// `li state doctor` (SPEC §12.3): running sessions whose current leg is stale and whose supervisor is dead (or never recorded) → aborted/failed.

import { z } from "zod";
import type { Ledger } from "../ledger/ledger.ts";
import type { SessionStatus } from "../lifecycle/policy.ts";
import { runSessionSweep, type SessionSweepSummary } from "./session-sweep.ts";
import { hostEnv, validateWith, type Sweep, type SweepEnv } from "./sweep.ts";

/** The statuses `--new-status` may choose (§12.3): a subset of the session's terminal statuses. */
export const DOCTOR_STATUSES = ["aborted", "failed"] as const satisfies readonly SessionStatus[];

export function isDoctorStatus(value: string): value is (typeof DOCTOR_STATUSES)[number] {
  return (DOCTOR_STATUSES as readonly string[]).includes(value);
}

export interface DoctorOptions {
  staleHours: number;
  newStatus: (typeof DOCTOR_STATUSES)[number];
  dryRun: boolean;
}

const schema = z.strictObject({
  staleHours: z.number().positive().finite(),
  newStatus: z.enum(DOCTOR_STATUSES),
  dryRun: z.boolean(),
});

const FLAG: Record<string, string> = { staleHours: "--stale-hours", newStatus: "--new-status", dryRun: "--dry-run" };

export const doctor: Sweep<DoctorOptions, SessionSweepSummary> = {
  name: "doctor",
  defaults: { staleHours: 24, newStatus: "aborted", dryRun: false },
  validate(input) {
    return validateWith(schema, { ...doctor.defaults, ...input }, FLAG);
  },
  runOnce(ledger: Ledger, now: number, options: DoctorOptions, env: SweepEnv = hostEnv()) {
    const threshold = options.staleHours * 3600;
    return runSessionSweep(ledger, now, env, {
      name: "doctor",
      actor: "li.state.doctor",
      dryRun: options.dryRun,
      decide(j) {
        // A live leg is never touched, however old its session (ADR-0105: "is this stuck", not "is this old").
        if (j.state === "alive") return { sweep: false, skip: "live" };
        if (j.ageSeconds <= threshold) return { sweep: false, skip: "recent" };
        return {
          sweep: true,
          status: options.newStatus,
          reasonCode: "session.stale.no_heartbeat",
          reasonSummary: j.state === "dead" ? `stale for ${Math.round(j.ageSeconds)}s and the supervisor is gone` : `stale for ${Math.round(j.ageSeconds)}s with no process markers`,
          killOrphan: false,
        };
      },
    });
  },
};

/** The doctor's summary line (§12.3). */
export function doctorLine(s: SessionSweepSummary, status: string): string {
  return `running=${s.running}, swept=${s.swept} → ${status}, skipped_recent=${s.skipped_recent}, skipped_live=${s.skipped_live}`;
}
