// A leased run follows its leg (SPEC §19): once the leg's session ends, the run ends with it — or, when the
// attempt failed and retries are left, waits in retry_wait for its next attempt. The leg calls this right
// after its own final write; the watcher calls it for runs whose leg died between the two (crash safety).

import type { Tx } from "../ledger/backend.ts";
import type { Ledger } from "../ledger/ledger.ts";
import type { ScheduleRunRow } from "../ledger/rows.ts";
import type { AppliedTransition, TransitionContext } from "../ledger/transition.ts";
import { reasonRefusal } from "../lifecycle/reasons.ts";
import { moveRun } from "./move.ts";
import { retryDelaySeconds } from "./retry.ts";

/** The run's status for each way its leg's session can end. A run has no completed_empty or aborted of its own. */
export const RUN_STATUS_OF_SESSION: Readonly<Record<string, string>> = Object.freeze({
  completed: "completed",
  completed_empty: "failed",
  failed: "failed",
  timed_out: "timed_out",
  aborted: "cancelled",
  cancelled: "cancelled",
});

/** The reason a run ends with when its session's own reason is not one a run may carry (session.* codes). */
const FALLBACK_REASON: Readonly<Record<string, string>> = Object.freeze({
  completed: "run.completed.ok",
  failed: "run.failed.exit_nonzero",
  timed_out: "run.timed_out.deadline",
  cancelled: "run.cancelled.system",
});

/** Statuses after which a retry is made (a person's cancel or kill never is). */
const RETRIED = new Set(["failed", "timed_out"]);

/** Moves `run` after its ended session inside an open transaction; null when there is nothing to do. */
export async function settleInTx(tx: Tx, ctx: TransitionContext, run: ScheduleRunRow, random: () => number = Math.random): Promise<AppliedTransition | null> {
  if (run.status !== "running" || run.session_id === null) return null;
  const session = await tx.getEntity("session", run.session_id);
  if (!session || session.status === "running" || session.status === null) return null;
  const to = RUN_STATUS_OF_SESSION[session.status] ?? "failed";
  const sessionReason = (session.status_reason_code as string | null) ?? null;
  const exitCode = (session.exit_code as number | null | undefined) ?? null;
  const evidence = [{ kind: "attempt", session_id: run.session_id, status: session.status, reason_code: sessionReason, exit_code: exitCode, attempt_depth: run.chain_depth }];
  const now = ctx.now();
  if (RETRIED.has(to) && run.retries > 0) {
    const delay = retryDelaySeconds(run, random);
    return moveRun(tx, ctx, run.id, {
      from: ["running"],
      to: "retry_wait",
      reasonCode: "schedule.retry_wait.backoff",
      reasonSummary: `attempt ${run.chain_depth + 1} ended ${session.status}; ${run.retries} ${run.retries === 1 ? "retry" : "retries"} left, the next in ${Math.round(delay * 1000) / 1000} s`,
      evidence,
      extra: { retry_at: now + delay, ended_at: now, exit_code: exitCode, lease_expires_at: null },
    });
  }
  const reason = sessionReason !== null && reasonRefusal("schedule_run", sessionReason) === null ? sessionReason : FALLBACK_REASON[to]!;
  return moveRun(tx, ctx, run.id, {
    from: ["running"],
    to,
    reasonCode: reason,
    reasonSummary: `its leg's session ${run.session_id} ended ${session.status}`,
    evidence,
    extra: { ended_at: now, exit_code: exitCode, lease_expires_at: null },
  });
}

/** The same in a transaction of its own, for run `runId`; emits the run's terminal event after commit. */
export async function settleRun(ledger: Ledger, runId: string, random?: () => number): Promise<AppliedTransition | null> {
  const applied = await ledger.transact(async (tx, ctx) => {
    await tx.readStatus("schedule_run", runId); // the row lock (PostgreSQL) before deciding
    const run = await tx.schedule.getRun(runId);
    return run ? settleInTx(tx, ctx, run, random) : null;
  });
  if (applied) ledger.emitTerminal(applied);
  return applied;
}
