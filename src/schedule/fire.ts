// The watcher's cron pass (SPEC §19): every schedule whose cursor is due is decided in one transaction
// per schedule — a fire record per due time (keyed on schedule and due time), a schedule_run for each
// (submitted to the queue, or created skipped with its reason), and the cursor moved past now by a
// guarded UPDATE. Two watchers deciding the same schedule: one commits, the other's transaction finds the
// cursor moved (or its fire record taken) and rolls back whole, so a due time fires once across the fleet.

import type { Tx } from "../ledger/backend.ts";
import type { CronScheduleRow } from "../ledger/cron-store.ts";
import type { Ledger } from "../ledger/ledger.ts";
import type { AppliedTransition, TransitionContext } from "../ledger/transition.ts";
import { POLICIES } from "../lifecycle/policy.ts";
import { FIRE_REASONS, type FireOutcome } from "../lifecycle/schedules.ts";
import { UsageError } from "../util/errors.ts";
import { decideDue, overlapAction, type Decision } from "./cron.ts";

/** Submits one fire's run to the schedule's queue inside `tx`; the queue's submit service does this. */
export type SubmitFire = (tx: Tx, ctx: TransitionContext, schedule: CronScheduleRow, dueAt: number) => Promise<AppliedTransition>;

export interface FireOptions {
  /** This host (recorded on each decision). */
  hostId: string;
  submit: SubmitFire;
  /** Schedules decided per pass; the next pass takes the rest. */
  limit?: number;
  /** Test seam: between the decision and its transaction (to let another watcher commit first). */
  beforeCommit?: (schedule: CronScheduleRow) => Promise<void> | void;
}

/** One decided due time. */
export interface FireAction {
  schedule: string;
  due_at: number;
  outcome: FireOutcome;
  run_id: string;
}

export interface FireSummary {
  actions: FireAction[];
  /** Schedules another watcher decided first (its transaction committed; ours rolled back). */
  taken: number;
  /** Schedules whose decision failed (the ledger, mostly): nothing of theirs was written; the next pass tries again. */
  errors: { schedule: string; error: unknown }[];
  /** When the next pass has something to decide (the earliest active cursor after this one), or null for never. */
  nextDueAt: number | null;
}

/** Another watcher moved the cursor or recorded the due time first: roll back everything of this schedule. */
class Taken extends Error {
  constructor() {
    super("decided by another watcher");
  }
}

const DEFAULT_LIMIT = 32;

const iso = (t: number) => new Date(t * 1000).toISOString();

/** A retry chain longer than this is not followed further (retries are capped far below it). */
const MAX_CHAIN = 1000;

/**
 * Whether the schedule's newest submitted run still holds its place (queued, waiting, running, or waiting
 * to retry): its newest attempt, following the retry chain, is not terminal.
 */
async function previousRunActive(tx: Tx, schedule: CronScheduleRow): Promise<boolean> {
  if (schedule.last_run_id === null) return false;
  let id = schedule.last_run_id;
  for (let hops = 0; hops < MAX_CHAIN; hops++) {
    const child = await tx.schedule.chainChild(id);
    if (!child) break;
    id = child.id;
  }
  const run = await tx.getEntity("schedule_run", id);
  return run !== null && !POLICIES.schedule_run.terminal.has(run.status);
}

/** A due time that is recorded but not run: a schedule_run created skipped with the outcome's reason. */
async function insertSkipped(ledger: Ledger, tx: Tx, schedule: CronScheduleRow, dueAt: number, outcome: Exclude<FireOutcome, "fired">, dropped: boolean): Promise<AppliedTransition> {
  const why = outcome === "skipped_overlap" ? `its previous run ${schedule.last_run_id} was still active` : "no watcher could fire it in time";
  const prepared = ledger.prepareCreate("schedule_run", {
    status: "skipped",
    reasonCode: FIRE_REASONS[outcome],
    reasonSummary: `schedule ${schedule.name} due ${iso(dueAt)}: ${why}${dropped ? " (older missed due times were not recorded one by one)" : ""}`,
    source: "system",
    actor: "li.schedule",
    // The queue it would have run in, so li ls and li queue ls place it; no request: it never runs.
    fields: { queue: schedule.queue },
  });
  return ledger.insertNew(tx, "schedule_run", prepared);
}

/**
 * A fire whose stored request the submit refuses (a row someone edited by hand, a queue name a newer rule
 * forbids) is recorded as a failed run naming the problem: a refusal never holds the schedule back, or
 * repeats every pass.
 */
async function submitOrFail(ledger: Ledger, tx: Tx, ctx: TransitionContext, schedule: CronScheduleRow, dueAt: number, submit: SubmitFire): Promise<AppliedTransition> {
  try {
    return await submit(tx, ctx, schedule, dueAt);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    const prepared = ledger.prepareCreate("schedule_run", {
      status: "failed",
      reasonCode: "run.failed.exception",
      reasonSummary: `schedule ${schedule.name} due ${iso(dueAt)}: its run could not be submitted: ${error.message}`,
      source: "system",
      actor: "li.schedule",
      fields: { queue: schedule.queue },
    });
    return ledger.insertNew(tx, "schedule_run", prepared);
  }
}

/** Decides one schedule in one transaction; returns what it committed, or throws Taken. */
async function decideSchedule(ledger: Ledger, due: CronScheduleRow, decision: Decision, options: FireOptions): Promise<{ actions: FireAction[]; transitions: AppliedTransition[] }> {
  await options.beforeCommit?.(due);
  return ledger.transact(async (tx, ctx) => {
    const schedule = await tx.cron.claimSchedule(due.id);
    // Gone, paused, held by another watcher's transaction, or its cursor moved since we decided: not ours.
    if (!schedule || schedule.paused !== 0 || schedule.next_due_at !== due.next_due_at) throw new Taken();
    let active = await previousRunActive(tx, schedule);
    let lastRunId: string | null | undefined;
    const actions: FireAction[] = [];
    const transitions: AppliedTransition[] = [];
    for (const [i, d] of decision.decisions.entries()) {
      const outcome: FireOutcome = d.action === "skip_missed" ? "skipped_missed" : overlapAction(schedule.overlap, active) === "skip_overlap" ? "skipped_overlap" : "fired";
      const transition = outcome === "fired" ? await submitOrFail(ledger, tx, ctx, schedule, d.dueAt, options.submit) : await insertSkipped(ledger, tx, schedule, d.dueAt, outcome, decision.dropped && i === 0);
      const recorded = await tx.cron.insertFire({ schedule_id: schedule.id, due_at: d.dueAt, outcome, run_id: transition.entityId, host_id: options.hostId, decided_at: ctx.now() });
      if (!recorded) throw new Taken();
      if (outcome === "fired") {
        lastRunId = transition.entityId;
        active = true;
      }
      actions.push({ schedule: schedule.name, due_at: d.dueAt, outcome, run_id: transition.entityId });
      transitions.push(transition);
    }
    const moved = await tx.cron.advance(schedule.id, due.next_due_at!, decision.nextDueAt, lastRunId, ctx.now());
    if (moved !== 1) throw new Taken();
    return { actions, transitions };
  });
}

/** One cron pass at `now` (the ledger's clock). */
export async function firePass(ledger: Ledger, now: number, options: FireOptions): Promise<FireSummary> {
  const summary: FireSummary = { actions: [], taken: 0, errors: [], nextDueAt: null };
  const due = await ledger.backend.cron.dueSchedules(now, options.limit ?? DEFAULT_LIMIT);
  for (const schedule of due) {
    const decision = decideDue({ expression: schedule.cron, timeZone: schedule.time_zone }, schedule.missed, schedule.next_due_at!, now);
    try {
      const { actions, transitions } = await decideSchedule(ledger, schedule, decision, options);
      summary.actions.push(...actions);
      // After commit, never inside it: a skipped run is a terminal event (its notices are owed).
      for (const t of transitions) ledger.emitTerminal(t);
    } catch (error) {
      // One schedule's failure (its transaction rolled back) does not hold back the others.
      if (error instanceof Taken) summary.taken++;
      else summary.errors.push({ schedule: schedule.name, error });
    }
  }
  // A failed schedule is due again at once; otherwise ask the ledger (left-over due ones beyond the limit too).
  summary.nextDueAt = summary.errors.length > 0 ? now : await ledger.backend.cron.earliestDue();
  return summary;
}
