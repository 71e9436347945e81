// Cron schedules' statements (SPEC §19), written once for every backend over the runner each adapter
// supplies for §19's statements (rules/schedule.ts): `?` placeholders and the row-lock clauses only
// PostgreSQL has. A schedule is claimed FOR UPDATE SKIP LOCKED there, so two watchers deciding the same
// schedule never wait on each other: one decides, the other passes it by.

import type { CronScheduleRow, CronStore, ScheduleFireRow } from "../cron-store.ts";
import type { ScheduleRunner } from "./schedule.ts";

const SCHEDULE_COLUMNS = ["id", "name", "cron", "time_zone", "overlap", "missed", "queue", "request_json", "paused", "next_due_at", "last_run_id", "created_at", "updated_at"] as const;
const FIRE_COLUMNS = ["schedule_id", "due_at", "outcome", "run_id", "host_id", "decided_at"] as const;

const placeholders = (n: number) => Array.from({ length: n }, () => "?").join(", ");

/** Numbers as numbers whatever the driver hands back (PostgreSQL's double precision arrives as a number, counts as strings). */
function scheduleRow(row: CronScheduleRow): CronScheduleRow {
  return { ...row, paused: Number(row.paused), next_due_at: row.next_due_at === null ? null : Number(row.next_due_at), created_at: Number(row.created_at), updated_at: Number(row.updated_at) };
}

function fireRow(row: ScheduleFireRow): ScheduleFireRow {
  return { ...row, due_at: Number(row.due_at), decided_at: Number(row.decided_at) };
}

export class CronStatements implements CronStore {
  constructor(private readonly db: ScheduleRunner) {}

  private async one(text: string, params: readonly unknown[]): Promise<CronScheduleRow | null> {
    const [row] = await this.db.all<CronScheduleRow>(text, params);
    return row ? scheduleRow(row) : null;
  }

  getSchedule(name: string): Promise<CronScheduleRow | null> {
    return this.one("SELECT * FROM schedules WHERE name = ?", [name]);
  }

  async listSchedules(): Promise<CronScheduleRow[]> {
    return (await this.db.all<CronScheduleRow>("SELECT * FROM schedules ORDER BY name", [])).map(scheduleRow);
  }

  async insertSchedule(row: CronScheduleRow): Promise<boolean> {
    const changed = await this.db.run(
      `INSERT INTO schedules (${SCHEDULE_COLUMNS.join(", ")}) VALUES (${placeholders(SCHEDULE_COLUMNS.length)}) ON CONFLICT (name) DO NOTHING`,
      SCHEDULE_COLUMNS.map((c) => row[c]),
    );
    return changed > 0;
  }

  async deleteSchedule(id: string): Promise<number> {
    await this.db.run("DELETE FROM schedule_fires WHERE schedule_id = ?", [id]);
    return this.db.run("DELETE FROM schedules WHERE id = ?", [id]);
  }

  setPaused(id: string, paused: boolean, nextDueAt: number | null, now: number): Promise<number> {
    return this.db.run("UPDATE schedules SET paused = ?, next_due_at = ?, updated_at = ? WHERE id = ?", [paused ? 1 : 0, nextDueAt, now, id]);
  }

  async dueSchedules(now: number, limit: number): Promise<CronScheduleRow[]> {
    // Spelled as the partial index is (paused = 0), so both planners read schedules_due_idx.
    const rows = await this.db.all<CronScheduleRow>("SELECT * FROM schedules WHERE paused = 0 AND next_due_at <= ? ORDER BY next_due_at LIMIT ?", [now, limit]);
    return rows.map(scheduleRow);
  }

  async earliestDue(): Promise<number | null> {
    const [row] = await this.db.all<{ t: number | null }>("SELECT MIN(next_due_at) AS t FROM schedules WHERE paused = 0", []);
    return row?.t == null ? null : Number(row.t);
  }

  claimSchedule(id: string): Promise<CronScheduleRow | null> {
    return this.one(`SELECT * FROM schedules WHERE id = ?${this.db.skipLocked}`, [id]);
  }

  advance(id: string, from: number, to: number | null, lastRunId: string | null | undefined, now: number): Promise<number> {
    if (lastRunId === undefined) return this.db.run("UPDATE schedules SET next_due_at = ?, updated_at = ? WHERE id = ? AND next_due_at = ?", [to, now, id, from]);
    return this.db.run("UPDATE schedules SET next_due_at = ?, last_run_id = ?, updated_at = ? WHERE id = ? AND next_due_at = ?", [to, lastRunId, now, id, from]);
  }

  async insertFire(row: ScheduleFireRow): Promise<boolean> {
    const changed = await this.db.run(
      `INSERT INTO schedule_fires (${FIRE_COLUMNS.join(", ")}) VALUES (${placeholders(FIRE_COLUMNS.length)}) ON CONFLICT (schedule_id, due_at) DO NOTHING`,
      FIRE_COLUMNS.map((c) => row[c]),
    );
    return changed > 0;
  }

  async listFires(scheduleId: string, limit: number): Promise<ScheduleFireRow[]> {
    return (await this.db.all<ScheduleFireRow>("SELECT * FROM schedule_fires WHERE schedule_id = ? ORDER BY due_at DESC LIMIT ?", [scheduleId, limit])).map(fireRow);
  }
}
