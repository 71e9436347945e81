// What a fire submits: the schedule's stored leg request, through the queue's submit service, as a
// queued run carrying `schedule.fired.due`, written in the cron pass's own transaction so the fire
// record and the run commit (or roll back) together.

import type { Tx } from "../ledger/backend.ts";
import type { CronScheduleRow } from "../ledger/cron-store.ts";
import type { Ledger } from "../ledger/ledger.ts";
import type { AppliedTransition, TransitionContext } from "../ledger/transition.ts";
import { FIRE_REASONS } from "../lifecycle/schedules.ts";
import type { SubmitFire } from "./fire.ts";
import { parseStoredRequest } from "./request.ts";
import { prepareSubmit, writeSubmit } from "./submit.ts";

const iso = (t: number) => new Date(t * 1000).toISOString();

export function queueSubmit(ledger: Ledger): SubmitFire {
  return async (tx: Tx, ctx: TransitionContext, schedule: CronScheduleRow, dueAt: number): Promise<AppliedTransition> => {
    // No --after: preparing reads nothing, so it may run inside the pass's transaction.
    const prepared = await prepareSubmit(ledger, {
      queue: schedule.queue,
      request: parseStoredRequest(`of schedule ${schedule.name}`, schedule.request_json),
      reasonCode: FIRE_REASONS.fired,
      reasonSummary: `schedule ${schedule.name} due ${iso(dueAt)}`,
      source: "system",
      actor: "li.schedule",
    });
    const submitted = await writeSubmit(tx, ledger, prepared, ctx);
    return submitted.transitions[0]!;
  };
}
