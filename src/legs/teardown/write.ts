// Step 9 of §8.2: ONE guarded write of the outcome that also closes the leg's row, or, when the leg lost, only the row.

import type { Tx } from "../../ledger/backend.ts";
import { applyTransition, validateTransition } from "../../ledger/transition.ts";
import { isTerminal } from "../../lifecycle/policy.ts";
import { TERMINATION_OUTCOMES } from "../outcome.ts";
import type { TeardownState } from "./state.ts";

interface Own {
  status: string;
  reasonCode: string;
}

/** The leg's own outcome for its row: a leg held open by a running linked session still failed itself. */
function legOutcome(s: TeardownState): Own {
  if (s.status === "running") {
    const base = TERMINATION_OUTCOMES[s.termination];
    return { status: base.status, reasonCode: base.reason };
  }
  return { status: s.status, reasonCode: s.reasonCode };
}

/** Closes this leg's row and stores its assistant message, inside the caller's transaction. */
export async function closeLegRow(tx: Tx, s: TeardownState, own: Own, opts: { deferred?: boolean } = {}): Promise<void> {
  if (s.message) await tx.insertMessage(s.message);
  await tx.updateLeg(
    s.legId,
    {
      ended_at: s.endedAt,
      status: own.status,
      reason_code: own.reasonCode,
      exit_code: s.exitCode,
      ...(opts.deferred ? { deferred: 1 } : {}),
      ...(s.message ? { first_msg_id: s.message.id, last_msg_id: s.message.id } : {}),
    },
    { onlyOpen: true },
  );
}

/** Closes only the leg's row, in a transaction of its own. */
export async function closeLegOnly(s: TeardownState, own: Own, opts: { deferred?: boolean } = {}): Promise<void> {
  await s.ledger!.backend.transaction((tx) => closeLegRow(tx, s, own, opts));
}

/**
 * (9) The guarded write: status, end time, exit code, verification and markers in one
 * transaction with the leg's row — guarded by the snapshot status and by this leg still being
 * current. A terminal snapshot or a leg no longer current writes only the leg's row; a lost
 * race or a rejection reports the persisted winner.
 */
export async function guardedWrite(s: TeardownState): Promise<void> {
  const own = { status: s.status, reasonCode: s.reasonCode };
  const base = { own, exitCode: s.exitCode, transition: null };
  const ledger = s.ledger;
  if (!ledger) {
    // No ledger at all (none), or one that failed earlier in this teardown (the runner reports it unrecorded).
    if (!s.ledgerError) s.result = { ...own, persisted: "none", ...base };
    return;
  }
  const snapshot = s.snapshot ?? { status: null, currentLegId: null, killRequested: false };
  const leg = legOutcome(s);
  const skipped = snapshot.status === null || isTerminal("session", snapshot.status) || snapshot.currentLegId !== s.legId;
  if (skipped) {
    await closeLegOnly(s, leg);
    s.result = await winnerOrSkipped(s, own);
    return;
  }

  const ended = s.status !== "running";
  const validated = validateTransition("session", {
    newStatus: s.status,
    reasonCode: s.reasonCode,
    ...(s.reasonSummary !== null ? { reasonSummary: s.reasonSummary } : {}),
    evidenceRefs: s.evidence,
    source: "executor",
    actor: "li agent",
    metadata: { leg_id: s.legId, ...s.metadata },
    expectedStatuses: [snapshot.status],
    extraFields: {
      // A running row carries no end (a leg held open by its linked session).
      ...(ended ? { ended_at: s.endedAt, exit_code: s.exitCode } : {}),
      artifact_verification_json: s.verification,
      node_metadata: s.nodeMetadata,
      // The session's message endpoints: its first message stays the first leg's; the last is this leg's.
      ...(s.message ? { first_msg_id: s.snapshot?.firstMsgId ?? s.message.id, last_msg_id: s.message.id } : {}),
    },
    alsoInTransaction: (tx) => closeLegRow(tx, s, leg),
  });
  const outcome = await ledger.transact(async (tx, ctx) => {
    const row = await tx.sessionLegState(s.sessionId);
    // Re-checked under the write lock: a resume may have taken over since the snapshot.
    if (!row || row.current_leg_id !== s.legId) {
      await closeLegRow(tx, s, leg);
      return { result: "not_current" as const };
    }
    const applied = await applyTransition(tx, ctx, validated, s.sessionId);
    if (applied.result !== "applied") await closeLegRow(tx, s, leg);
    return applied;
  });
  if (outcome.result === "applied") {
    s.result = { ...own, persisted: "written", own, exitCode: s.exitCode, transition: outcome.transition };
    return;
  }
  if (outcome.result === "rejected") s.log(outcome.error.message);
  s.result = await winnerOrSkipped(s, own);
}

/** The persisted winner when the session is terminal, else this leg's own outcome, not written. */
async function winnerOrSkipped(s: TeardownState, own: Own): Promise<NonNullable<TeardownState["result"]>> {
  const row = await s.ledger!.backend.sessionLegState(s.sessionId);
  if (row && isTerminal("session", row.status)) {
    return { status: row.status, reasonCode: String(row.status_reason_code ?? ""), persisted: "winner", own, exitCode: s.exitCode, transition: null };
  }
  return { ...own, persisted: "skipped", own, exitCode: s.exitCode, transition: null };
}
