// The frozen result of `li wait` (§11, ADR-0064 D6): the outcome record, its tab-separated line and its JSON.

import { SUCCESS_STATUS, type EntityKind } from "../lifecycle/policy.ts";
import { isRegisteredReason } from "../lifecycle/reasons.ts";
import type { WaitState } from "../ledger/rows.ts";
import { safeText } from "../util/text.ts";

export interface WaitOutcome {
  /** The canonical id (a branch or run id resolves to its session's id). */
  id: string;
  kind: EntityKind;
  /** The id as the caller typed it. */
  input: string;
  /** The terminal status, or `unknown` when the row was deleted while waited on. */
  status: string;
  /** A registered reason code, else `unknown`. */
  reason: string;
  artifactDir: string | null;
  exitCode: number | null;
  success: boolean;
}

/** Projects a stored state; `null` (the row is gone) becomes status/reason `unknown`. */
export function toOutcome(target: { kind: EntityKind; id: string; input: string }, state: WaitState | null): WaitOutcome {
  if (!state) return { ...target, status: "unknown", reason: "unknown", artifactDir: null, exitCode: null, success: false };
  const status = state.status ?? "unknown";
  return {
    ...target,
    status,
    reason: state.reason !== null && isRegisteredReason(state.reason) ? state.reason : "unknown",
    artifactDir: state.artifactDir || null,
    exitCode: state.exitCode,
    success: status === SUCCESS_STATUS[target.kind],
  };
}

/**
 * `<id>\tstatus=…\treason=…\tartifact_dir=…\texit_code=…` — frozen; scripts parse it. The id, status
 * and reason come from safe alphabets; the path is escaped (§18): a tab, newline or ESC in a
 * `--save-dir` prints as `\x09`, `\x0a`, `\x1b`, so the line stays one line of five fields.
 */
export function formatWaitLine(o: WaitOutcome): string {
  return `${safeText(o.id)}\tstatus=${o.status}\treason=${o.reason}\tartifact_dir=${o.artifactDir === null ? "-" : safeText(o.artifactDir)}\texit_code=${o.exitCode ?? "-"}`;
}

/** The `--json` record (docs/json.md); fields are only ever added. */
export function waitJson(o: WaitOutcome): Record<string, unknown> {
  return { id: o.id, kind: o.kind, input: o.input, status: o.status, reason: o.reason, artifact_dir: o.artifactDir, exit_code: o.exitCode, success: o.success };
}
