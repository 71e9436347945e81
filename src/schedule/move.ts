// A scheduled run's status change inside an open transaction: the guarded transition (§5), never a bare UPDATE.

import type { Tx } from "../ledger/backend.ts";
import type { Source } from "../ledger/rows.ts";
import type { AppliedTransition, TransitionContext } from "../ledger/transition.ts";
import { applyTransition, validateTransition } from "../ledger/transition.ts";

export interface RunMove {
  from: readonly string[];
  to: string;
  reasonCode: string;
  reasonSummary?: string;
  evidence?: Record<string, unknown>[];
  extra?: Record<string, unknown>;
  source?: Source;
  actor?: string;
  metadata?: Record<string, unknown>;
}

/**
 * Moves run `id` from one of `move.from` to `move.to`. Returns the applied transition, or null when the run
 * was no longer in one of `from` (someone else moved it first: a lost race is no error). A move the
 * registry refuses is a bug in li's own code and throws (rolling the caller's transaction back).
 */
export async function moveRun(tx: Tx, ctx: TransitionContext, id: string, move: RunMove): Promise<AppliedTransition | null> {
  const validated = validateTransition("schedule_run", {
    newStatus: move.to,
    reasonCode: move.reasonCode,
    expectedStatuses: [...move.from],
    source: move.source ?? "system",
    actor: move.actor ?? "li schedule",
    ...(move.reasonSummary !== undefined ? { reasonSummary: move.reasonSummary } : {}),
    ...(move.evidence ? { evidenceRefs: move.evidence } : {}),
    ...(move.extra ? { extraFields: move.extra } : {}),
    ...(move.metadata ? { metadata: move.metadata } : {}),
  });
  const outcome = await applyTransition(tx, ctx, validated, id);
  if (outcome.result === "applied") return outcome.transition;
  if (outcome.result === "rejected") throw outcome.error;
  return null;
}
