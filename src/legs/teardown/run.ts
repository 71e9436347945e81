// The teardown of SPEC §8.2: the ten steps in their fixed order, as data, and the runner that walks them.

import { baseReason, applyEscalation, applyMissingArtifacts, completionEvidenceGate, deferTerminal, pushCallbacks, readSnapshot, reconcileLinkedSession, snapshotEndpoints, verifyArtifacts } from "./steps.ts";
import { initialState, type TeardownInput, type TeardownResult, type TeardownState } from "./state.ts";
import { finalRecordOf, guardedWrite, resultOf } from "./write.ts";
import { writeFinalRecord, type FinalWrite } from "./record.ts";
import { retryLockWaitMs, retryUnreachable } from "../ledger-retry.ts";
import { LedgerUnavailableError } from "../../util/errors.ts";
import { formatDuration } from "../../util/duration.ts";
import { mark } from "../../util/profile.ts";

export interface TeardownStep {
  readonly name: string;
  /** "stop" ends the walk (a deferred leg). */
  readonly run: (s: TeardownState) => Promise<"stop" | void> | "stop" | void;
  /**
   * For a step that reads the ledger to decide the outcome: its read, run again while the ledger is
   * unreachable, within --ledger-retry (§17), so the outcome recorded after a recovered outage is the one
   * an unfailed teardown records (a kill request's manual_kill, a linked session's verdict). The final
   * write has its own retry (recordAfterOutage); a step that writes is not run twice.
   */
  readonly retry?: (s: TeardownState) => Promise<void>;
}

/** The order is the contract: it decides which reason scripts and operators see. */
export const TEARDOWN_STEPS: readonly TeardownStep[] = Object.freeze([
  { name: "deferTerminal", run: deferTerminal },
  { name: "snapshotEndpoints", run: snapshotEndpoints, retry: readSnapshot },
  { name: "baseReason", run: baseReason },
  { name: "verifyArtifacts", run: verifyArtifacts },
  { name: "reconcileLinkedSession", run: reconcileLinkedSession, retry: reconcileLinkedSession },
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
  armOutageDeadline(s);
  try {
    return await walk(s, input, steps);
  } finally {
    liftCut(input);
  }
}

/**
 * §17: with an outage plan, --ledger-retry counts from the teardown's first ledger call, and every call
 * until the outcome is written (or spooled) is cut to it: a link that went silent costs the leg its
 * budget, not a call deadline (75 s) per read and write. The push after it is not cut (a handler may run
 * longer); neither is anything with --ledger-retry 0, whose one attempt has its normal deadline.
 */
function armOutageDeadline(s: TeardownState): void {
  if (!s.outage || !s.ledger) return;
  const budgetMs = s.outage.retrySeconds * 1000;
  s.finalWriteDeadlineMs = (s.outage.clockMs ?? (() => performance.now()))() + budgetMs;
  if (budgetMs > 0) s.ledger.backend.cutCallsAt?.(performance.now() + budgetMs);
}

/** Lifts the cut (armOutageDeadline) on the leg's ledger, which the state drops once it failed. */
function liftCut(input: TeardownInput): void {
  input.ledger?.backend.cutCallsAt?.(null);
}

async function walk(s: TeardownState, input: TeardownInput, steps: readonly TeardownStep[]): Promise<TeardownResult> {
  for (const step of steps) {
    if (step.name === "pushCallbacks") liftCut(input);
    try {
      const stop = (await runStep(s, input, step)) === "stop";
      mark(`teardown: ${step.name}`);
      if (stop) break;
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
  if (s.ledgerError) return recordAfterOutage(s, input);
  return s.result ?? { ...own, persisted: "none", own, exitCode: s.exitCode, transition: null };
}

/**
 * One step; a step whose read met an unreachable ledger reads again, with backoff, until what is left of
 * --ledger-retry (the teardown's budget, shared with the final write) is spent. Still failing, it throws
 * the last ledger error: the walk then goes on without the ledger and the final write is retried or spooled.
 */
async function runStep(s: TeardownState, input: TeardownInput, step: TeardownStep): Promise<"stop" | void> {
  try {
    return await step.run(s);
  } catch (error) {
    const ledger = s.ledger;
    const outage = input.outage;
    const retry = step.retry;
    const failure = ledger?.backend.ledgerError(error) ?? null;
    if (!retry || !ledger || !outage || !failure?.unreachable || failure.diskFull || s.finalWriteDeadlineMs === null) throw error;
    const clockMs = outage.clockMs ?? (() => performance.now());
    const seconds = Math.max(0, (s.finalWriteDeadlineMs - clockMs()) / 1000);
    if (seconds <= 0) throw error;
    tellRetrying(s, failure, outage.retrySeconds);
    const attempt = await retryUnreachable<void>(
      async () => {
        try {
          return { ok: true, value: await retry(s) };
        } catch (again) {
          const f = ledger.backend.ledgerError(again);
          if (!f) throw again;
          return { ok: false, retry: f.unreachable && !f.diskFull, error: f };
        }
      },
      { seconds, clockMs, ...(outage.sleep ? { sleep: outage.sleep } : {}) },
    );
    if (attempt.ok) return;
    throw attempt.error;
  }
}

/** Says once per teardown that the ledger is retried (§17: one line, not one per attempt). */
function tellRetrying(s: TeardownState, failure: LedgerUnavailableError, retrySeconds: number): void {
  if (s.toldRetrying || retrySeconds <= 0) return;
  s.toldRetrying = true;
  s.log(`the ledger is unreachable (${failure.message}); retrying the final write for up to ${formatDuration(retrySeconds)}`);
}

/** The steps after a ledger failure see no ledger: the outcome is still computed, and nothing is pushed. */
function loseTheLedger(s: TeardownState, error: LedgerUnavailableError): void {
  s.ledgerError ??= error;
  s.ledger = null;
  s.result = null;
}

/**
 * The ledger failed during teardown. A refusal (read-only, not a li ledger, newer li) is reported
 * unrecorded at once; an unreachable ledger (§17: busy, disk full, connection lost) gets the final
 * write retried with backoff for `--ledger-retry`, then the outcome is spooled for `li watch` to replay.
 */
async function recordAfterOutage(s: TeardownState, input: TeardownInput): Promise<TeardownResult> {
  const ledger = input.ledger;
  const outage = input.outage;
  if (!ledger || !outage || !s.ledgerError!.unreachable) return unrecorded(s);
  tellRetrying(s, s.ledgerError!, outage.retrySeconds);
  const record = finalRecordOf(s);
  const clockMs = outage.clockMs ?? (() => performance.now());
  // What is left of --ledger-retry since the first attempt (the whole of it when that attempt never ran).
  const seconds = s.finalWriteDeadlineMs === null ? outage.retrySeconds : Math.max(0, (s.finalWriteDeadlineMs - clockMs()) / 1000);
  const attempt = await retryUnreachable<FinalWrite>(
    async (leftMs) => {
      try {
        // Each attempt waits for a lock at most a second and never past the budget, so the retries end at --ledger-retry.
        return { ok: true, value: await writeFinalRecord(ledger, record, { actor: "li agent", lockWaitMs: retryLockWaitMs(leftMs), withinMs: leftMs }) };
      } catch (error) {
        const failure = ledger.backend.ledgerError(error);
        if (!failure) throw error;
        return { ok: false, retry: failure.unreachable, error: failure };
      }
    },
    { seconds, clockMs, ...(outage.sleep ? { sleep: outage.sleep } : {}) },
  );
  if (attempt.ok) {
    // Recorded after all: the leg goes on as if the write had landed the first time (push included).
    s.ledger = ledger;
    s.ledgerError = null;
    liftCut(input);
    try {
      s.result = await resultOf(s, attempt.value);
    } catch {
      const own = { status: s.status, reasonCode: s.reasonCode };
      s.result = attempt.value.result === "applied" ? { ...own, persisted: "written", own, exitCode: s.exitCode, transition: attempt.value.transition } : { ...own, persisted: "skipped", own, exitCode: s.exitCode, transition: null };
    }
    await pushCallbacks(s);
    return s.result;
  }
  s.ledgerError = attempt.error as LedgerUnavailableError;
  if (!s.ledgerError.unreachable) return unrecorded(s);
  try {
    const file = await outage.spool(outage, { ledger: ledger.location, now: s.now(), record, setup: null, reservation: s.spoolReservation ?? null });
    const own = { status: s.status, reasonCode: s.reasonCode };
    return { ...own, persisted: "spooled", own, exitCode: s.exitCode, transition: null, ledgerError: s.ledgerError, spoolFile: file };
  } catch (error) {
    s.log(`cannot spool the outcome in ${outage.spoolDir}: ${error instanceof Error ? error.message : String(error)}`);
    return unrecorded(s);
  }
}

/**
 * The leg's outcome that the ledger refused (or that could not be spooled either): the CLI says plainly
 * it was NOT recorded and exits 78, and the reaper later calls the session a phantom.
 */
function unrecorded(s: TeardownState): TeardownResult {
  const own = { status: s.status, reasonCode: s.reasonCode };
  return { ...own, persisted: "unrecorded", own, exitCode: s.exitCode, transition: null, ledgerError: s.ledgerError! };
}
