// The storage contract for cron schedules and their fire records (SPEC §19): rows in, rows out, no
// policy. The runs a fire records are schedule_runs, written through the guarded write and the submit.

import type { Awaitable } from "../util/awaitable.ts";
import type { FireOutcome, MissedPolicy, OverlapPolicy } from "../lifecycle/schedules.ts";

/** A `schedules` row. */
export interface CronScheduleRow {
  id: string;
  name: string;
  cron: string;
  time_zone: string;
  overlap: OverlapPolicy;
  missed: MissedPolicy;
  queue: string;
  request_json: string;
  paused: number;
  next_due_at: number | null;
  last_run_id: string | null;
  created_at: number;
  updated_at: number;
}

/** A `schedule_fires` row: how one due time of one schedule was decided. */
export interface ScheduleFireRow {
  schedule_id: string;
  due_at: number;
  outcome: FireOutcome;
  run_id: string | null;
  host_id: string | null;
  decided_at: number;
}

/** Reads and writes of schedules. Writes only inside `Backend.transaction` (via `tx.cron`). */
export interface CronStore {
  getSchedule(name: string): Awaitable<CronScheduleRow | null>;
  listSchedules(): Awaitable<CronScheduleRow[]>;
  /** Inserts unless the name is taken; returns whether it inserted. */
  insertSchedule(row: CronScheduleRow): Awaitable<boolean>;
  /** Deletes the schedule and its fire records (its runs stay); returns schedules deleted. */
  deleteSchedule(id: string): Awaitable<number>;
  /** Pauses, or resumes with a new cursor; returns rows changed. */
  setPaused(id: string, paused: boolean, nextDueAt: number | null, now: number): Awaitable<number>;
  /** Active schedules whose cursor is at or before `now`, earliest first. */
  dueSchedules(now: number, limit: number): Awaitable<CronScheduleRow[]>;
  /** The earliest cursor of an active schedule (when a watcher must next look), or null when none falls due. */
  earliestDue(): Awaitable<number | null>;
  /**
   * The schedule, locked for the rest of the transaction where the backend has row locks (PostgreSQL:
   * FOR UPDATE SKIP LOCKED, so a second watcher passes it by instead of waiting); null when it is gone
   * or another transaction holds it.
   */
  claimSchedule(id: string): Awaitable<CronScheduleRow | null>;
  /**
   * Moves the cursor from `from` to `to` (and the last run, when given): guarded on the cursor, so of two
   * watchers deciding the same due times only one moves it. Returns rows changed.
   */
  advance(id: string, from: number, to: number | null, lastRunId: string | null | undefined, now: number): Awaitable<number>;
  /** Records a decision; returns whether it inserted (false: that due time was already decided). */
  insertFire(row: ScheduleFireRow): Awaitable<boolean>;
  /** A schedule's newest fire records first. */
  listFires(scheduleId: string, limit: number): Awaitable<ScheduleFireRow[]>;
}
