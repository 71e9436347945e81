// `li kill RUN_ID` for a scheduled run (SPEC §19): a queued, waiting or retrying run has no process and is
// cancelled in the ledger; a running one's leg is stopped like any leg (its session is killed, and the run
// follows); a run leased but whose leg has not linked its session yet is cancelled, and that leg never starts.

import type { Ledger } from "../ledger/ledger.ts";
import type { ScheduleRunRow } from "../ledger/rows.ts";
import { isTerminal } from "../lifecycle/policy.ts";
import { moveRun } from "./move.ts";
import { chainTip } from "./retry.ts";

export type RunKill =
  | { action: "cancelled"; run_id: string; previous_status: string }
  | { action: "kill_session"; run_id: string; session_id: string }
  | { action: "already"; run_id: string; status: string };

/** Cancels run `id` (its chain's newest attempt), or says which session's leg to stop. */
export async function cancelRun(ledger: Ledger, id: string, reason?: string): Promise<RunKill> {
  const first = await ledger.backend.schedule.getRun(id);
  if (!first) throw new Error(`schedule run ${id} is gone`);
  const tip: ScheduleRunRow = await chainTip(ledger, first);
  const outcome = await ledger.transact(async (tx, ctx) => {
    await tx.readStatus("schedule_run", tip.id);
    const run = (await tx.schedule.getRun(tip.id))!;
    if (isTerminal("schedule_run", run.status)) return { kill: { action: "already", run_id: run.id, status: run.status } as RunKill, applied: null };
    if (run.status === "running" && run.session_id !== null) return { kill: { action: "kill_session", run_id: run.id, session_id: run.session_id } as RunKill, applied: null };
    const applied = await moveRun(tx, ctx, run.id, {
      from: [run.status],
      to: "cancelled",
      reasonCode: "run.cancelled.manual_kill",
      reasonSummary: reason ?? (run.status === "running" ? "li kill: cancelled before its leg started" : `li kill: cancelled while ${run.status}`),
      source: "admin",
      actor: "li kill",
      extra: { ended_at: ctx.now(), lease_expires_at: null },
    });
    return { kill: { action: "cancelled", run_id: run.id, previous_status: run.status } as RunKill, applied };
  });
  if (outcome.applied) ledger.emitTerminal(outcome.applied);
  return outcome.kill;
}
