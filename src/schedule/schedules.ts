// Cron schedules as the CLI manages them (SPEC §19): add, list, remove, pause and resume. Everything is
// validated before the ledger is touched; the firing itself is the watcher's (src/schedule/fire.ts).

import type { CronScheduleRow, ScheduleFireRow } from "../ledger/cron-store.ts";
import type { Ledger } from "../ledger/ledger.ts";
import { MISSED_POLICIES, OVERLAP_POLICIES, type MissedPolicy, type OverlapPolicy } from "../lifecycle/schedules.ts";
import { UsageError } from "../util/errors.ts";
import { assertSafeId } from "../util/ids.ts";
import { assertQueueName } from "./queues.ts";
import { localTimeZone, nextDueAfter, parseChoice, parseCronSpec } from "./cron.ts";

/** `li schedule add` as given, before validation. */
export interface ScheduleInput {
  name: string;
  cron: string | undefined;
  timeZone: string | undefined;
  overlap: string | undefined;
  missed: string | undefined;
  queue: string | undefined;
}

/** A schedule ready to insert: everything checked, the time zone made explicit. */
export interface ValidSchedule {
  name: string;
  cron: string;
  timeZone: string;
  overlap: OverlapPolicy;
  missed: MissedPolicy;
  queue: string;
}

/** Checks `li schedule add`'s flags; a UsageError names the first culprit. Writes nothing. */
export function validateSchedule(input: ScheduleInput): ValidSchedule {
  const name = assertSafeId(input.name, "NAME");
  if (input.cron === undefined) throw new UsageError("li schedule add needs --cron EXPR (five fields: minute hour day-of-month month day-of-week)");
  if (input.queue === undefined) throw new UsageError("li schedule add needs --queue NAME: each fire is submitted to that queue");
  const queue = assertQueueName(input.queue);
  const spec = parseCronSpec(input.cron, input.timeZone ?? localTimeZone());
  return {
    name,
    cron: spec.expression,
    timeZone: spec.timeZone,
    overlap: input.overlap === undefined ? "skip" : parseChoice(input.overlap, OVERLAP_POLICIES, "--overlap"),
    missed: input.missed === undefined ? "skip" : parseChoice(input.missed, MISSED_POLICIES, "--missed"),
    queue,
  };
}

/** Inserts a validated schedule whose first due time is the first after now; a taken name is a usage error. */
export async function addSchedule(ledger: Ledger, schedule: ValidSchedule, requestJson: string): Promise<CronScheduleRow> {
  await ledger.ready();
  const now = ledger.now();
  const row: CronScheduleRow = {
    id: ledger.newId(),
    name: schedule.name,
    cron: schedule.cron,
    time_zone: schedule.timeZone,
    overlap: schedule.overlap,
    missed: schedule.missed,
    queue: schedule.queue,
    request_json: requestJson,
    paused: 0,
    next_due_at: nextDueAfter({ expression: schedule.cron, timeZone: schedule.timeZone }, now),
    last_run_id: null,
    created_at: now,
    updated_at: now,
  };
  const inserted = await ledger.transact(async (tx) => tx.cron.insertSchedule(row));
  if (!inserted) throw new UsageError(`schedule '${schedule.name}' already exists (li schedule rm ${schedule.name} first)`);
  return row;
}

async function named(ledger: Ledger, name: string): Promise<CronScheduleRow> {
  const row = await ledger.backend.cron.getSchedule(name);
  if (!row) throw new UsageError(`no schedule named '${name}' (li schedule ls)`);
  return row;
}

/** A schedule with its newest decisions, for `li schedule ls`. */
export interface ScheduleView {
  schedule: CronScheduleRow;
  lastFire: ScheduleFireRow | null;
}

export async function listSchedules(ledger: Ledger): Promise<ScheduleView[]> {
  const rows = await ledger.backend.cron.listSchedules();
  return Promise.all(rows.map(async (schedule) => ({ schedule, lastFire: (await ledger.backend.cron.listFires(schedule.id, 1))[0] ?? null })));
}

/** Removes the schedule and its fire records; the runs it submitted stay in the ledger. */
export async function removeSchedule(ledger: Ledger, name: string): Promise<CronScheduleRow> {
  const row = await named(ledger, assertSafeId(name, "NAME"));
  await ledger.transact(async (tx) => tx.cron.deleteSchedule(row.id));
  return row;
}

/**
 * Pauses (nothing fires, nothing is recorded as missed) or resumes: a resumed schedule's next due time is
 * the first after now, so the time it spent paused is not a backlog of missed fires.
 */
export async function setSchedulePaused(ledger: Ledger, name: string, paused: boolean): Promise<CronScheduleRow> {
  const row = await named(ledger, assertSafeId(name, "NAME"));
  await ledger.ready();
  const now = ledger.now();
  const next = paused ? row.next_due_at : nextDueAfter({ expression: row.cron, timeZone: row.time_zone }, now);
  await ledger.transact(async (tx) => tx.cron.setPaused(row.id, paused, next, now));
  return { ...row, paused: paused ? 1 : 0, next_due_at: next, updated_at: now };
}
