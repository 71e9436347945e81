// The linked-session finalizer (SPEC §12.4, §8.2 step 5), run by the watcher: a session held running for its linked session takes that session's outcome once it ends.

import { z } from "zod";
import type { EntityRow, LegRow, RunningSession } from "../ledger/rows.ts";
import type { Ledger } from "../ledger/ledger.ts";
import { applyTransition, validateTransition, type AppliedTransition } from "../ledger/transition.ts";
import { isTerminal } from "../lifecycle/policy.ts";
import { reasonRefusal } from "../lifecycle/reasons.ts";
import { LINKED_HOLD_REASON, terminalLinkedOutcome } from "../legs/linked-outcome.ts";
import { storedObjects } from "../legs/stored-json.ts";
import { markersOf } from "./judge.ts";
import { classifyLeg } from "./liveness.ts";
import { hostEnv, validateWith, type Sweep, type SweepEnv } from "./sweep.ts";
import { runningSessions } from "./session-sweep.ts";
import { guardConflict } from "./write.ts";

const ACTOR = "li.watch.linked";

export interface LinkedOptions {
  dryRun: boolean;
}

export interface LinkedAction {
  session_id: string;
  linked_session_id: string;
  /** What the linked session was: its status, or null when it no longer exists. */
  linked_status: string | null;
  status: string;
  reason_code: string;
  applied: boolean;
  /** Why the re-check inside the write declined (the session changed since it was judged). */
  conflict: string | null;
}

export interface LinkedSummary {
  sweep: "linked";
  dry_run: boolean;
  /** Running sessions held for a linked session. */
  held: number;
  finalized: number;
  /** Held, and the linked session still runs. */
  skipped_running: number;
  /** Held, but a leg of the session itself lives (a resume took over). */
  skipped_live: number;
  conflicts: number;
  actions: LinkedAction[];
  /** Applied transitions (for the caller's log; sweeps never push, delivery runs the notices). */
  transitions: AppliedTransition[];
}

type Evidence = Record<string, unknown>;

interface Outcome {
  status: string;
  reasonCode: string;
  reasonSummary: string;
  evidence: Evidence[];
}

const schema = z.strictObject({ dryRun: z.boolean() });


/** The linked id: the column, or (when a prune nulled that soft reference) the evidence the hold recorded. */
export function linkedIdOf(row: EntityRow): string | null {
  if (typeof row.linked_session_id === "string" && row.linked_session_id !== "") return row.linked_session_id;
  const ref = (storedObjects(row.status_evidence_refs) as Evidence[]).find((e) => e.kind === "linked_session" && typeof e.id === "string");
  return (ref?.id as string | undefined) ?? null;
}

/**
 * The outcome the held session takes, exactly as teardown step 5 would have written it: a terminal
 * linked session supplies its status, its reason when that is a session reason (else
 * `session.linked.finalized`) and its evidence; a linked session that no longer exists leaves the
 * leg's own outcome. Null while the linked session has not ended.
 */
export function linkedOutcome(linkedId: string, linked: EntityRow | null, leg: LegRow | null): Outcome | null {
  if (!linked) {
    return {
      status: leg?.status && isTerminal("session", leg.status) ? leg.status : "failed",
      reasonCode: leg?.reason_code && reasonRefusal("session", leg.reason_code) === null ? leg.reason_code : "run.failed.exit_nonzero",
      reasonSummary: `linked session ${linkedId} no longer exists; the leg's own outcome stands`,
      evidence: [{ kind: "linked_session", id: linkedId, found: false }],
    };
  }
  return terminalLinkedOutcome(linked);
}

/** A held session's current leg has closed its row (teardown did) — cheap pre-filter before reading the row. */
function mayBeHeld(s: RunningSession): boolean {
  const current = s.legs.find((l) => l.id === s.current_leg_id);
  return s.linked_session_id !== null || (current !== undefined && current.ended_at !== null);
}

/** Some unended leg of the session lives (its supervisor judged alive by the one classifier). The held leg has closed its row. */
function liveLeg(s: RunningSession, now: number, env: Pick<SweepEnv, "hostId" | "probe">): boolean {
  return s.legs.some(
    (l) =>
      l.ended_at === null &&
      classifyLeg({ markers: markersOf(l), hostId: env.hostId, now, probe: env.probe }).supervisor === "alive",
  );
}

type WriteOutcome = { result: "applied"; transition: AppliedTransition } | { result: "conflict"; why: string };

async function finalize(ledger: Ledger, s: RunningSession, leg: LegRow | null, outcome: Outcome, linkedId: string, now: number): Promise<WriteOutcome> {
  const openLegIds = s.legs.filter((l) => l.ended_at === null).map((l) => l.id);
  const validated = validateTransition("session", {
    newStatus: outcome.status,
    reasonCode: outcome.reasonCode,
    reasonSummary: outcome.reasonSummary,
    evidenceRefs: outcome.evidence,
    source: "system",
    actor: ACTOR,
    metadata: { linked_session_id: linkedId, leg_id: leg?.id ?? null },
    expectedStatuses: ["running"],
    extraFields: { ended_at: now, exit_code: leg?.exit_code ?? null },
    alsoInTransaction: async (tx) => {
      for (const id of openLegIds) await tx.updateLeg(id, { status: outcome.status, reason_code: outcome.reasonCode, ended_at: now }, { onlyOpen: true });
    },
  });
  const result = await ledger.transact(async (tx, ctx): Promise<WriteOutcome> => {
    // Re-checked under the write lock: still held, by the same leg.
    const changed = await guardConflict(tx, s.id, { currentLegId: s.current_leg_id });
    if (changed) return { result: "conflict", why: changed };
    const row = await tx.getEntity("session", s.id);
    if (row?.status_reason_code !== LINKED_HOLD_REASON) return { result: "conflict", why: "no_longer_held" };
    const applied = await applyTransition(tx, ctx, validated, s.id);
    if (applied.result === "applied") return applied;
    if (applied.result === "conflict") return { result: "conflict", why: applied.why };
    throw applied.error;
  });
  if (result.result === "applied") ledger.emitTerminal(result.transition);
  return result;
}

export const linkedFinalizer: Sweep<LinkedOptions, LinkedSummary> = {
  name: "linked",
  defaults: { dryRun: false },
  validate(input) {
    return validateWith(schema, { ...linkedFinalizer.defaults, ...input }, { dryRun: "--dry-run" });
  },
  async runOnce(ledger: Ledger, now: number, options: LinkedOptions, env: SweepEnv = hostEnv()): Promise<LinkedSummary> {
    const summary: LinkedSummary = { sweep: "linked", dry_run: options.dryRun, held: 0, finalized: 0, skipped_running: 0, skipped_live: 0, conflicts: 0, actions: [], transitions: [] };
    for await (const s of runningSessions(ledger)) {
      if (!mayBeHeld(s)) continue;
      const row = await ledger.backend.getEntity("session", s.id);
      if (!row || row.status !== "running" || row.status_reason_code !== LINKED_HOLD_REASON) continue;
      const linkedId = linkedIdOf(row);
      if (linkedId === null) continue;
      summary.held++;
      // A leg of its own that lives (a resume took over): that leg will write the session.
      if (liveLeg(s, now, env)) {
        summary.skipped_live++;
        continue;
      }
      const leg = s.legs.find((l) => l.id === s.current_leg_id) ?? null;
      // The hold is written with the leg's row closed; a current leg that never closed died mid-run: the reaper's case.
      if (!leg || leg.ended_at === null) continue;
      const linked = await ledger.backend.getEntity("session", linkedId);
      const outcome = linkedOutcome(linkedId, linked, leg);
      if (!outcome) {
        summary.skipped_running++;
        continue;
      }
      const action: LinkedAction = {
        session_id: s.id,
        linked_session_id: linkedId,
        linked_status: linked?.status ?? null,
        status: outcome.status,
        reason_code: outcome.reasonCode,
        applied: false,
        conflict: null,
      };
      summary.actions.push(action);
      if (options.dryRun) {
        summary.finalized++;
        continue;
      }
      await env.hooks?.beforeWrite?.(s.id);
      const written = await finalize(ledger, s, leg, outcome, linkedId, now);
      if (written.result === "applied") {
        action.applied = true;
        summary.finalized++;
        summary.transitions.push(written.transition);
      } else {
        action.conflict = written.why;
        summary.conflicts++;
      }
    }
    return summary;
  },
};
