// The outcome a session takes from its linked session (§8.2 step 5): one rule for a leg's teardown and
// for the watcher's finalizer, which applies it later to a session the teardown held open.

import type { EntityRow } from "../ledger/rows.ts";
import { isTerminal } from "../lifecycle/policy.ts";
import { reasonRefusal, type ReasonCode } from "../lifecycle/reasons.ts";
import { storedObjects } from "./stored-json.ts";

/** The reason a teardown leaves on a session it holds running for its still-running linked session. */
export const LINKED_HOLD_REASON: ReasonCode = "session.running.linked_pending";
/** Used when the linked session's own reason is not one a session accepts. */
export const LINKED_FINALIZED_REASON: ReasonCode = "session.linked.finalized";

export interface LinkedOutcome {
  status: string;
  reasonCode: string;
  reasonSummary: string;
  evidence: Record<string, unknown>[];
}

/** The evidence entry naming the linked session as it was seen. */
export function linkedRef(linked: EntityRow): Record<string, unknown> {
  return { kind: "linked_session", id: linked.id, status: linked.status, reason_code: linked.status_reason_code ?? null };
}

/** A terminal linked session supplies its status, reason and evidence; null while it is not terminal. */
export function terminalLinkedOutcome(linked: EntityRow): LinkedOutcome | null {
  if (!isTerminal("session", linked.status)) return null;
  const own = linked.status_reason_code;
  return {
    status: linked.status,
    reasonCode: typeof own === "string" && reasonRefusal("session", own) === null ? own : LINKED_FINALIZED_REASON,
    reasonSummary: `outcome of linked session ${linked.id}`,
    evidence: [linkedRef(linked), ...storedObjects(linked.status_evidence_refs)],
  };
}
