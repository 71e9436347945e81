// The pass shared by doctor, `kill --all-stale` and the phantom reaper: judge every running session, decide, write the dead ones.

import type { Ledger } from "../ledger/ledger.ts";
import type { RunningSession } from "../ledger/rows.ts";
import type { AppliedTransition } from "../ledger/transition.ts";
import type { SessionStatus } from "../lifecycle/policy.ts";
import type { ReasonCode } from "../lifecycle/reasons.ts";
import { judgeSession, killOrphanCommand, livenessEvidence, type Judgement, type KilledEvidence } from "./judge.ts";
import type { SweepEnv } from "./sweep.ts";
import { LEG_RUN_ID_ENV } from "../legs/env.ts";
import { writeJudged, type JudgedWriteOutcome } from "./write.ts";

/** A sweep's verdict on one judged session. */
export type Decision =
  | { sweep: true; status: SessionStatus; reasonCode: ReasonCode; reasonSummary: string; killOrphan: boolean }
  | { sweep: false; skip: "live" | "recent" | "remote" | "unknown" };

export interface SweepAction {
  session_id: string;
  leg_id: string | null;
  status: string;
  reason_code: string;
  /** false in a dry run, or when the re-check found the session changed (see `conflict`). */
  applied: boolean;
  conflict: Extract<JudgedWriteOutcome, { result: "conflict" }>["why"] | null;
  killed: KilledEvidence | null;
  age_seconds: number;
}

export interface SessionSweepSummary {
  sweep: string;
  dry_run: boolean;
  running: number;
  /** Written (or, in a dry run, that would be written). */
  swept: number;
  skipped_live: number;
  skipped_recent: number;
  skipped_remote: number;
  skipped_unknown: number;
  /** Judged dead, but the re-check inside the write found a new leg, a heartbeat or a terminal status. */
  conflicts: number;
  actions: SweepAction[];
  /** The transitions applied (for the caller's log; sweeps never push). */
  transitions: AppliedTransition[];
}

export interface SessionSweepSpec {
  name: string;
  actor: string;
  dryRun: boolean;
  heartbeatGrace?: number;
  decide(j: Judgement): Decision;
}

const PAGE = 500;

/** Every running session, read a page at a time (ordered by id) so a sweep never holds them all. */
export async function* runningSessions(ledger: Ledger): AsyncGenerator<RunningSession> {
  let afterId: string | null = null;
  for (;;) {
    const page = await ledger.backend.listRunningSessions({ afterId, limit: PAGE });
    if (page.length === 0) return;
    afterId = page.at(-1)!.id;
    yield* page;
  }
}

export async function runSessionSweep(ledger: Ledger, now: number, env: SweepEnv, spec: SessionSweepSpec): Promise<SessionSweepSummary> {
  const summary: SessionSweepSummary = {
    sweep: spec.name,
    dry_run: spec.dryRun,
    running: 0,
    swept: 0,
    skipped_live: 0,
    skipped_recent: 0,
    skipped_remote: 0,
    skipped_unknown: 0,
    conflicts: 0,
    actions: [],
    transitions: [],
  };
  for await (const session of runningSessions(ledger)) {
    summary.running++;
    const j = judgeSession(session, now, env, { ...(spec.heartbeatGrace === undefined ? {} : { heartbeatGrace: spec.heartbeatGrace }), ...(env.reachableSince == null ? {} : { reachableSince: env.reachableSince }) });
    const decision = spec.decide(j);
    if (!decision.sweep) {
      summary[`skipped_${decision.skip}`]++;
      continue;
    }
    const action: SweepAction = {
      session_id: session.id,
      leg_id: j.currentLeg?.id ?? null,
      status: decision.status,
      reason_code: decision.reasonCode,
      applied: false,
      conflict: null,
      killed: null,
      age_seconds: j.ageSeconds,
    };
    summary.actions.push(action);
    if (spec.dryRun) {
      summary.swept++;
      continue;
    }
    // The orphan dies first: once the session is terminal nobody would record the command's outcome.
    action.killed = decision.killOrphan ? killOrphanCommand(j, env, now) : null;
    const outcome = await writeJudged(ledger, env, j, {
      status: decision.status,
      reasonCode: decision.reasonCode,
      reasonSummary: action.killed?.found_by ? `${decision.reasonSummary}; its command, named by no marker, was found by ${LEG_RUN_ID_ENV} and killed` : decision.reasonSummary,
      evidence: action.killed ? [livenessEvidence(j), action.killed] : [livenessEvidence(j)],
      source: "system",
      actor: spec.actor,
      endedAt: now,
    });
    if (outcome.result === "applied") {
      action.applied = true;
      summary.swept++;
      summary.transitions.push(outcome.transition);
    } else {
      action.conflict = outcome.why;
      summary.conflicts++;
    }
  }
  return summary;
}
