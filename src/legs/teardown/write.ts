// Step 9 of §8.2: ONE guarded write of the outcome that also closes the leg's row, or, when the leg lost, only the row.

import type { Tx } from "../../ledger/backend.ts";
import { NO_ARTIFACT_ROOT } from "../../ledger/rows.ts";
import { isTerminal } from "../../lifecycle/policy.ts";
import { TERMINATION_OUTCOMES } from "../outcome.ts";
import { firstLockWaitMs } from "../ledger-retry.ts";
import { writeFinalRecord, type FinalRecord, type FinalWrite } from "./record.ts";
import type { LegOutage, SpoolWhole, TeardownState } from "./state.ts";

interface Own {
  status: string;
  reasonCode: string;
}

/** The leg's own outcome for its row: a leg held open by a running linked session still failed itself. */
function legOutcome(s: TeardownState): FinalRecord["leg"] {
  const gone = s.runDirProblem?.artifactRootGone ? { artifactRootGone: true as const } : {};
  const usage = s.containment ? { usage: s.containment.usage } : {};
  if (s.status === "running") {
    const base = TERMINATION_OUTCOMES[s.termination];
    return { status: base.status, reasonCode: base.reason, ...gone, ...usage };
  }
  return { status: s.status, reasonCode: s.reasonCode, ...gone, ...usage };
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
      ...(s.runDirProblem?.artifactRootGone ? { artifact_root: NO_ARTIFACT_ROOT } : {}),
      ...(s.containment?.usage ?? {}),
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

/** The write's inputs as data: what step 9 writes, and what the spool keeps when the ledger cannot take it (§17). */
export function finalRecordOf(s: TeardownState): FinalRecord {
  return {
    sessionId: s.sessionId,
    legId: s.legId,
    status: s.status,
    reasonCode: s.reasonCode,
    reasonSummary: s.reasonSummary,
    // Which containment held and what outlived the command (§8.7), beside whatever decided the outcome.
    evidence: s.containment ? [...s.evidence, s.containment.evidence] : s.evidence,
    metadata: s.metadata,
    endedAt: s.endedAt,
    exitCode: s.exitCode,
    verification: s.verification,
    nodeMetadata: s.nodeMetadata,
    message: s.message,
    leg: legOutcome(s),
  };
}

/**
 * (9) The guarded write: status, end time, exit code, verification and markers in one
 * transaction with the leg's row — guarded by the status read under the write lock and by this leg
 * still being current. A terminal session or a leg no longer current writes only the leg's row (a
 * sweep's inference about this leg is replaced by a late record, §17); a lost race or a rejection
 * reports the persisted winner.
 */
export async function guardedWrite(s: TeardownState): Promise<void> {
  const own = { status: s.status, reasonCode: s.reasonCode };
  const ledger = s.ledger;
  if (!ledger && s.spoolWhole && s.outage) {
    // Setup never reached the ledger (§17): setup and outcome go into the spool together, as one entry.
    s.result = await spoolWholeLeg(s, s.spoolWhole, s.outage);
    return;
  }
  if (!ledger) {
    // No ledger at all (none), or one that failed earlier in this teardown (the runner retries, then spools).
    if (!s.ledgerError) s.result = { ...own, persisted: "none", own, exitCode: s.exitCode, transition: null };
    return;
  }
  // With an outage plan (§17), the first attempt waits for a lock no longer than what is left of --ledger-retry.
  const leftMs = s.outage && s.finalWriteDeadlineMs !== null ? Math.max(0, s.finalWriteDeadlineMs - (s.outage.clockMs ?? (() => performance.now()))()) : null;
  const lockWait = leftMs === null ? {} : { lockWaitMs: firstLockWaitMs(leftMs) };
  s.result = await resultOf(s, await writeFinalRecord(ledger, finalRecordOf(s), { actor: "li agent", ...lockWait }));
}

/** One spool entry with the leg's setup and its outcome; unwritable, the leg is reported unrecorded. */
async function spoolWholeLeg(s: TeardownState, whole: SpoolWhole, outage: LegOutage): Promise<NonNullable<TeardownState["result"]>> {
  const own = { status: s.status, reasonCode: s.reasonCode };
  try {
    const file = await outage.spool(outage, { ledger: whole.error.path, now: s.now(), record: finalRecordOf(s), setup: whole.setup, reservation: s.spoolReservation ?? null });
    return { ...own, persisted: "spooled", own, exitCode: s.exitCode, transition: null, ledgerError: whole.error, spoolFile: file };
  } catch (error) {
    // Nothing recorded anywhere: as a leg whose setup failed (§8.4), it ran unrecorded, and its notice runs once undurable.
    s.log(`cannot spool the leg in ${outage.spoolDir} (${error instanceof Error ? error.message : String(error)}); it ran unrecorded`);
    return { ...own, persisted: "none", own, exitCode: s.exitCode, transition: null };
  }
}

/** What the teardown reports for a final write's outcome. */
export async function resultOf(s: TeardownState, outcome: FinalWrite): Promise<NonNullable<TeardownState["result"]>> {
  const own = { status: s.status, reasonCode: s.reasonCode };
  if (outcome.result === "applied") return { ...own, persisted: "written", own, exitCode: s.exitCode, transition: outcome.transition };
  if (outcome.result === "rejected") s.log(outcome.error.message);
  return winnerOrSkipped(s, own);
}

/** The persisted winner when the session is terminal, else this leg's own outcome, not written. */
async function winnerOrSkipped(s: TeardownState, own: Own): Promise<NonNullable<TeardownState["result"]>> {
  const row = await s.ledger!.backend.sessionLegState(s.sessionId);
  if (row && isTerminal("session", row.status)) {
    return { status: row.status, reasonCode: String(row.status_reason_code ?? ""), persisted: "winner", own, exitCode: s.exitCode, transition: null };
  }
  return { ...own, persisted: "skipped", own, exitCode: s.exitCode, transition: null };
}
