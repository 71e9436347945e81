// The teardown of SPEC §8.2: the ten steps in their fixed order, as data, and the runner that walks them.

import { baseReason, applyEscalation, applyMissingArtifacts, completionEvidenceGate, deferTerminal, pushCallbacks, reconcileLinkedSession, snapshotEndpoints, verifyArtifacts } from "./steps.ts";
import { initialState, type TeardownInput, type TeardownResult, type TeardownState } from "./state.ts";
import { guardedWrite } from "./write.ts";
import type { LedgerUnavailableError } from "../../util/errors.ts";

export interface TeardownStep {
  readonly name: string;
  /** "stop" ends the walk (a deferred leg). */
  readonly run: (s: TeardownState) => Promise<"stop" | void> | "stop" | void;
}

/** The order is the contract: it decides which reason scripts and operators see. */
export const TEARDOWN_STEPS: readonly TeardownStep[] = Object.freeze([
  { name: "deferTerminal", run: deferTerminal },
  { name: "snapshotEndpoints", run: snapshotEndpoints },
  { name: "baseReason", run: baseReason },
  { name: "verifyArtifacts", run: verifyArtifacts },
  { name: "reconcileLinkedSession", run: reconcileLinkedSession },
  { name: "applyMissingArtifacts", run: applyMissingArtifacts },
  { name: "applyEscalation", run: applyEscalation },
  { name: "completionEvidenceGate", run: completionEvidenceGate },
  { name: "guardedWrite", run: guardedWrite },
  { name: "pushCallbacks", run: pushCallbacks },
]);

/**
 * Walks the steps. When the ledger itself fails (disk full, read-only…), the remaining steps still
 * compute the outcome, in memory only, and the result says it is unrecorded; any other failure inside
 * teardown is logged and the in-memory status returned.
 */
export async function runTeardown(input: TeardownInput, steps: readonly TeardownStep[] = TEARDOWN_STEPS): Promise<TeardownResult> {
  const s = initialState(input);
  for (const step of steps) {
    try {
      if ((await step.run(s)) === "stop") break;
    } catch (error) {
      const ledgerError = s.ledger?.backend.ledgerError(error) ?? null;
      if (ledgerError) {
        loseTheLedger(s, ledgerError);
        continue;
      }
      s.log(`teardown step ${step.name} failed: ${error instanceof Error ? error.message : String(error)}`);
      const own = { status: s.status, reasonCode: s.reasonCode };
      return s.result ?? { ...own, persisted: "failed", own, exitCode: s.exitCode, transition: null };
    }
  }
  const own = { status: s.status, reasonCode: s.reasonCode };
  if (s.ledgerError) return unrecorded(s);
  return s.result ?? { ...own, persisted: "none", own, exitCode: s.exitCode, transition: null };
}

/** The steps after a ledger failure see no ledger: the outcome is still computed, and nothing is pushed. */
function loseTheLedger(s: TeardownState, error: LedgerUnavailableError): void {
  s.ledgerError ??= error;
  s.ledger = null;
  s.result = null;
}

/**
 * The leg's outcome that the ledger could not take. Issue 13 (§17) spools it here (when
 * `ledgerError.unreachable`, after retrying) so `li watch` replays it; until then it is only reported:
 * the CLI says plainly it was NOT recorded and exits 78, and the reaper later calls the session a phantom.
 */
function unrecorded(s: TeardownState): TeardownResult {
  const own = { status: s.status, reasonCode: s.reasonCode };
  return { ...own, persisted: "unrecorded", own, exitCode: s.exitCode, transition: null, ledgerError: s.ledgerError! };
}
