// A sweep's write (SPEC §12.1): decided outside the lock, re-checked inside it, through the one guarded transition.

import type { Tx } from "../ledger/backend.ts";
import type { Source } from "../ledger/rows.ts";
import type { Ledger } from "../ledger/ledger.ts";
import { applyTransition, validateTransition, type AppliedTransition, type TransitionOutcome } from "../ledger/transition.ts";
import type { Judgement } from "./judge.ts";
import type { SweepEnv } from "./sweep.ts";

export interface JudgedWrite {
  status: string;
  reasonCode: string;
  reasonSummary: string;
  evidence: Record<string, unknown>[];
  source: Source;
  actor: string;
  endedAt: number;
  /** Re-check the judged heartbeat too (sweeps do; `li kill` waited on a live leg and only re-checks the leg). */
  checkHeartbeat?: boolean;
}

/** Why a judged session no longer matches, seen under the write lock. */
export type GuardConflict = "gone" | "not_running" | "leg_changed" | "heartbeat_changed";

export type JudgedWriteOutcome =
  | { result: "applied"; transition: AppliedTransition }
  | { result: "conflict"; why: GuardConflict | Extract<TransitionOutcome, { result: "conflict" }>["why"] };

/**
 * Re-reads the session inside the open transaction: null while it still runs with the judged
 * current leg (and, when given, the judged heartbeat); else what changed.
 */
export async function guardConflict(tx: Tx, sessionId: string, judged: { currentLegId: string | null; heartbeatAt?: number | null }): Promise<GuardConflict | null> {
  const seen = await tx.readSweepGuard(sessionId);
  if (!seen) return "gone";
  if (seen.status !== "running") return "not_running";
  if (seen.currentLegId !== judged.currentLegId) return "leg_changed";
  if (judged.heartbeatAt !== undefined && seen.heartbeatAt !== judged.heartbeatAt) return "heartbeat_changed";
  return null;
}

/**
 * Writes the judged session terminal only if, under the write lock, it is still running with the
 * same current leg (and heartbeat) the sweep judged; closes its open legs in the same transaction.
 * Emits the terminal event after commit; never pushes handlers (bulk sweeps leave that to delivery).
 */
export async function writeJudged(ledger: Ledger, env: Pick<SweepEnv, "hooks">, j: Judgement, w: JudgedWrite): Promise<JudgedWriteOutcome> {
  const validated = validateTransition("session", {
    newStatus: w.status,
    reasonCode: w.reasonCode,
    reasonSummary: w.reasonSummary,
    evidenceRefs: w.evidence,
    source: w.source,
    actor: w.actor,
    expectedStatuses: ["running"],
    extraFields: { ended_at: w.endedAt },
    alsoInTransaction: async (tx) => {
      for (const legId of j.openLegIds) {
        await tx.updateLeg(legId, { status: w.status, reason_code: w.reasonCode, ended_at: w.endedAt }, { onlyOpen: true });
      }
    },
  });
  await env.hooks?.beforeWrite?.(j.session.id);
  const outcome = await ledger.transact(async (tx, ctx): Promise<JudgedWriteOutcome> => {
    const changed = await guardConflict(tx, j.session.id, (w.checkHeartbeat ?? true) ? j.guard : { currentLegId: j.guard.currentLegId });
    if (changed) return { result: "conflict", why: changed };
    const applied = await applyTransition(tx, ctx, validated, j.session.id);
    if (applied.result === "applied") return applied;
    if (applied.result === "conflict") return { result: "conflict", why: applied.why };
    throw applied.error; // running → terminal is a declared edge; a rejection here is a bug
  });
  if (outcome.result === "applied") ledger.emitTerminal(outcome.transition);
  return outcome;
}
