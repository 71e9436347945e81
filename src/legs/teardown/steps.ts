// The teardown steps of SPEC §8.2 before and after the write: each one small, named and testable alone.

import { verifyContract } from "../../contracts/artifacts.ts";
import { escalationEvidence, readEscalations } from "../escalation.ts";
import { hasEvidence } from "../evidence.ts";
import { TERMINATION_OUTCOMES } from "../outcome.ts";
import { linkedRef, LINKED_HOLD_REASON, terminalLinkedOutcome } from "../linked-outcome.ts";
import { storedObject } from "../stored-json.ts";
import { readLinkedSession } from "./linked.ts";
import type { Evidence, TeardownState } from "./state.ts";
import { closeLegOnly } from "./write.ts";

/** (1) A deferred leg (--auto-resume) writes no session status and emits nothing; only its own leg row closes. */
export async function deferTerminal(s: TeardownState): Promise<"stop" | void> {
  if (!s.deferred) return;
  const own = TERMINATION_OUTCOMES[s.termination];
  s.status = own.status;
  s.reasonCode = own.reason;
  s.message = assistantMessage(s);
  if (s.ledger) await closeLegOnly(s, { status: own.status, reasonCode: own.reason }, { deferred: true });
  s.result = { status: own.status, reasonCode: own.reason, persisted: "deferred", own: { status: own.status, reasonCode: own.reason }, exitCode: s.exitCode, transition: null };
  return "stop";
}

/** (2) The end time, the message endpoints and the session as it stands — in memory, nothing written. */
export async function snapshotEndpoints(s: TeardownState): Promise<void> {
  s.endedAt = s.now();
  s.message = assistantMessage(s);
  await readSnapshot(s);
}

/**
 * The ledger part of (2): the session and this leg as they stand. What a teardown reads again while the
 * ledger is unreachable (§17); the end time and the message stay the ones taken when the command ended.
 */
export async function readSnapshot(s: TeardownState): Promise<void> {
  if (!s.ledger) return;
  const row = await s.ledger.backend.sessionLegState(s.sessionId);
  const leg = await s.ledger.backend.getLeg(s.legId);
  s.snapshot = row
    ? { status: row.status, currentLegId: row.current_leg_id, killRequested: leg?.kill_requested_at != null, firstMsgId: row.first_msg_id }
    : { status: null, currentLegId: null, killRequested: false, firstMsgId: null };
  s.nodeMetadata = { ...storedObject(row?.node_metadata), ...s.nodeMetadata };
}

/** (3) The base status and reason from how the command ended; a SIGTERM after `li kill` is a manual kill. */
export function baseReason(s: TeardownState): void {
  const termination = (s.termination === "sigterm" || s.termination === "sighup") && s.snapshot?.killRequested ? "manual_kill" : s.termination;
  const base = TERMINATION_OUTCOMES[termination];
  s.status = base.status;
  s.reasonCode = base.reason;
  s.reasonSummary ??= summaryOf(s, termination);
  s.evidence.push({ kind: "process", termination, exit_code: s.exitCode });
}

/** (4) Artifact verification, computed against the leg's artifact root. */
export function verifyArtifacts(s: TeardownState): void {
  s.verification = verifyContract(s.contract, s.artifactRoot, s.now());
}

/** (5) A provider failure defers to the linked session: terminal → its outcome; running → stay running; missing → failed. */
export async function reconcileLinkedSession(s: TeardownState): Promise<void> {
  if (s.status !== "failed" || s.exitCode === null || !s.providerExitCodes.includes(s.exitCode) || !s.linkedSessionId || !s.ledger) return;
  const linked = await readLinkedSession(s.ledger, s.linkedSessionId, s.linkedRetry);
  if (!linked) {
    s.metadata.linked_session = { id: s.linkedSessionId, found: false };
    return;
  }
  if (linked.status === "running") {
    s.status = "running";
    s.reasonCode = LINKED_HOLD_REASON;
    s.reasonSummary = `provider failure (exit ${s.exitCode}); linked session ${linked.id} still running`;
    s.evidence = [linkedRef(linked) as Evidence];
    s.linkedSupplied = true;
    return;
  }
  const outcome = terminalLinkedOutcome(linked);
  if (!outcome) return;
  s.status = outcome.status;
  s.reasonCode = outcome.reasonCode;
  s.reasonSummary = outcome.reasonSummary;
  s.evidence = outcome.evidence as Evidence[];
  s.linkedSupplied = true;
}

/** (6) A missing required artifact demotes only `completed`; otherwise it is kept in the transition metadata. */
export function applyMissingArtifacts(s: TeardownState): void {
  const v = s.verification;
  if (!v) return;
  s.metadata.artifact_verification_status = v.status;
  if (v.status !== "failed") return;
  const missing = v.missing_required.map((a) => ({ kind: "artifact", id: a.id, path: a.path, required: true }));
  if (s.status === "completed") {
    s.status = "failed";
    s.reasonCode = "run.failed.missing_artifact";
    s.reasonSummary = `required artifact${missing.length === 1 ? "" : "s"} missing: ${missing.map((m) => m.id).join(", ")}`;
    s.evidence = missing;
  } else {
    s.metadata.missing_required_artifact_ids = missing.map((m) => m.id);
  }
}

/**
 * (7) Entries the command wrote to LI_ESCALATE_FILE turn an otherwise completed outcome into failed. Something
 * li refuses to read there (a symlink, a FIFO, over 1 MiB) is an escalation too: the command left a file it
 * was not asked for, and a refusal that completed the run would hide it (§18).
 */
export function applyEscalation(s: TeardownState): void {
  const escalations = readEscalations(s.escalateFile);
  if (escalations.refused !== null) s.log(`${escalations.refused}; recorded as escalation evidence`);
  const evidence = escalationEvidence(escalations);
  if (evidence.length === 0) return;
  if (s.status === "completed") {
    s.status = "failed";
    s.reasonCode = "run.failed.escalated";
    const first = escalations.entries[0];
    s.reasonSummary =
      first === undefined ? `escalated: ${escalations.refused}` : typeof first.reason === "string" ? `escalated: ${first.reason}` : "escalated";
    s.evidence = evidence;
  } else {
    s.metadata.escalations = escalations.entries;
    if (escalations.dropped > 0) s.metadata.escalations_dropped = escalations.dropped;
    if (escalations.refused !== null) s.metadata.escalation_refused = escalations.refused;
  }
}

/** (8) The completion-evidence gate (§8.3): only a checked, evidence-free completion becomes completed_empty. */
export async function completionEvidenceGate(s: TeardownState): Promise<void> {
  if (s.status !== "completed" || s.linkedSupplied || s.evidenceCwd === null) return;
  if ((s.verification?.produced.length ?? 0) > 0) return;
  if (s.assistantText.trim() !== "") return; // a response is evidence for response-only work
  const evidence = await s.checkEvidence(s.evidenceCwd, { baseRef: s.baseRef });
  s.metadata.completion_evidence = evidence;
  if (hasEvidence(evidence) !== false) return; // null = no opinion, never demotes
  s.status = "completed_empty";
  s.reasonCode = "run.completed_empty.no_evidence";
  s.reasonSummary = `no evidence of work: ${evidence.reason}`;
  s.evidence = [{ kind: "completion_evidence", base_ref: evidence.base_ref, commits_ahead: evidence.commits_ahead, dirty: evidence.dirty, reason: evidence.reason }];
}

/** (10) After commit: in-process terminal listeners, then the registered after-commit hooks (callbacks, §9.4). */
export async function pushCallbacks(s: TeardownState): Promise<void> {
  const result = s.result;
  if (!result) return;
  if (result.transition && s.ledger) s.ledger.emitTerminal(result.transition);
  for (const hook of s.afterCommit) {
    try {
      await hook(result);
    } catch (error) {
      s.log(`after-commit hook failed: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
}

function assistantMessage(s: TeardownState): TeardownState["message"] {
  if (s.assistantText === "") return null;
  return {
    id: s.newId(),
    session_id: s.sessionId,
    branch_id: s.branchId,
    leg_id: s.legId,
    role: "assistant",
    content: s.assistantText,
    truncated: s.assistantTruncated ? 1 : 0,
    created_at: s.endedAt,
  };
}

function summaryOf(s: TeardownState, termination: string): string {
  switch (termination) {
    case "exited_ok":
      return "exit 0";
    case "exited_nonzero":
      return `exit ${s.exitCode}`;
    case "own_signal":
      return `killed by a signal of its own (exit ${s.exitCode})`;
    case "timeout":
      return "deadline passed";
    case "sigint":
      return "interrupted (SIGINT)";
    case "manual_kill":
      return "cancelled by li kill";
    default:
      return `cancelled (${termination.toUpperCase()})`;
  }
}
