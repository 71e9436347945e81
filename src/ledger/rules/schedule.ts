// §19's bookkeeping statements, written once for every backend over a small runner: `?` placeholders
// (the PostgreSQL adapter numbers them), integer counts (CAST, so PostgreSQL's bigint COUNT arrives as a
// number) and the row-lock clauses only PostgreSQL has. Status columns are never written here.

import type { QueueRow, ScheduleDepRow, ScheduleRunRow, WatchHostRow } from "../rows.ts";
import type { QueueCounts, QueuePatch, ScheduleStore } from "../schedule-store.ts";

/** What a backend supplies: run a statement for rows or for a count of changed rows, and its lock clauses. */
export interface ScheduleRunner {
  all<T>(text: string, params: readonly unknown[]): Promise<T[]>;
  run(text: string, params: readonly unknown[]): Promise<number>;
  /** " FOR UPDATE" where row locks exist, inside a transaction; "" otherwise. */
  readonly forUpdate: string;
  /** " FOR UPDATE SKIP LOCKED" where row locks exist, inside a transaction; "" otherwise. */
  readonly skipLocked: string;
}

/** The default lease, when a run carries none: four heartbeats (15 s) may be missed before it expires. */
export const DEFAULT_LEASE_SECONDS = 60;

const ACTIVE = "('queued', 'waiting_dependency', 'running', 'retry_wait')";

export class ScheduleStatements implements ScheduleStore {
  constructor(private readonly db: ScheduleRunner) {}

  private async one<T>(text: string, params: readonly unknown[]): Promise<T | null> {
    return (await this.db.all<T>(text, params))[0] ?? null;
  }

  getQueue(name: string): Promise<QueueRow | null> {
    return this.one<QueueRow>("SELECT * FROM queues WHERE name = ?", [name]);
  }

  listQueues(): Promise<QueueRow[]> {
    return this.db.all<QueueRow>("SELECT * FROM queues ORDER BY name", []);
  }

  queuesToDispatch(): Promise<QueueRow[]> {
    // Each EXISTS probes schedule_runs_queue_idx (queue, status, …) for one row.
    return this.db.all<QueueRow>("SELECT q.* FROM queues q WHERE q.paused = 0 AND EXISTS (SELECT 1 FROM schedule_runs r WHERE r.queue = q.name AND r.status = 'queued') ORDER BY q.name", []);
  }

  async ensureQueue(row: QueueRow): Promise<void> {
    await this.db.run(
      "INSERT INTO queues (name, parallel, scope, paused, lease_attempts, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (name) DO NOTHING",
      [row.name, row.parallel, row.scope, row.paused, row.lease_attempts, row.created_at, row.updated_at],
    );
  }

  updateQueue(name: string, patch: QueuePatch, now: number): Promise<number> {
    const sets: string[] = [];
    const params: unknown[] = [];
    if (patch.parallel !== undefined) (sets.push("parallel = ?"), params.push(patch.parallel));
    if (patch.scope !== undefined) (sets.push("scope = ?"), params.push(patch.scope));
    if (patch.paused !== undefined) (sets.push("paused = ?"), params.push(patch.paused ? 1 : 0));
    if (patch.lease_attempts !== undefined) (sets.push("lease_attempts = ?"), params.push(patch.lease_attempts));
    sets.push("updated_at = ?");
    params.push(now, name);
    return this.db.run(`UPDATE queues SET ${sets.join(", ")} WHERE name = ?`, params);
  }

  lockQueue(name: string): Promise<QueueRow | null> {
    return this.one<QueueRow>(`SELECT * FROM queues WHERE name = ?${this.db.forUpdate}`, [name]);
  }

  getRun(id: string): Promise<ScheduleRunRow | null> {
    return this.one<ScheduleRunRow>("SELECT * FROM schedule_runs WHERE id = ?", [id]);
  }

  leaseCandidates(queue: string, limit: number): Promise<ScheduleRunRow[]> {
    return this.db.all<ScheduleRunRow>(
      `SELECT * FROM schedule_runs WHERE queue = ? AND status = 'queued' ORDER BY created_at, id LIMIT ?${this.db.skipLocked}`,
      [queue, limit],
    );
  }

  async countRunning(queue: string, hostId: string | null): Promise<number> {
    const byHost = hostId === null ? "" : " AND leased_by = ?";
    const row = await this.one<{ n: number }>(`SELECT CAST(COUNT(*) AS integer) AS n FROM schedule_runs WHERE queue = ? AND status = 'running'${byHost}`, hostId === null ? [queue] : [queue, hostId]);
    return Number(row?.n ?? 0);
  }

  async queuedAhead(queue: string, createdAt: number, id: string): Promise<number> {
    const row = await this.one<{ n: number }>(
      "SELECT CAST(COUNT(*) AS integer) AS n FROM schedule_runs WHERE queue = ? AND status = 'queued' AND (created_at < ? OR (created_at = ? AND id < ?))",
      [queue, createdAt, createdAt, id],
    );
    return Number(row?.n ?? 0);
  }

  async queuedTail(queue: string, limit: number): Promise<{ total: number; ids: string[] }> {
    // The count and the tail in one statement, so both read the same snapshot (a submit between them
    // would shift every position by one); an empty tail means nothing is queued (total 0). Both walk an
    // index: the count (uncorrelated, run once) over its covering range, the tail backwards from the end
    // of schedule_runs_queue_idx (no sort).
    const rows = await this.db.all<{ id: string; total: number }>(
      `SELECT id, (SELECT CAST(COUNT(*) AS integer) FROM schedule_runs WHERE queue = ? AND status = 'queued') AS total
       FROM schedule_runs WHERE queue = ? AND status = 'queued' ORDER BY created_at DESC, id DESC LIMIT ?`,
      [queue, queue, limit],
    );
    return { total: Number(rows[0]?.total ?? 0), ids: rows.map((r) => r.id) };
  }

  expiredLeases(now: number, limit: number): Promise<ScheduleRunRow[]> {
    return this.db.all<ScheduleRunRow>("SELECT * FROM schedule_runs WHERE status = 'running' AND lease_expires_at < ? ORDER BY lease_expires_at LIMIT ?", [now, limit]);
  }

  async nextTimedAt(after: number, leases: boolean): Promise<number | null> {
    // Each MIN walks its own partial or leading index (schedule_runs_retry_idx; status first for leases).
    const lease = leases ? ", (SELECT MIN(lease_expires_at) FROM schedule_runs WHERE status = 'running' AND lease_expires_at > ?) AS l" : ", NULL AS l";
    const [row] = await this.db.all<{ r: number | null; l: number | null }>(
      `SELECT (SELECT MIN(retry_at) FROM schedule_runs WHERE status = 'retry_wait' AND retry_at > ?) AS r${lease}`,
      leases ? [after, after] : [after],
    );
    const times = [row?.r, row?.l].filter((t): t is number => t != null).map(Number);
    return times.length === 0 ? null : Math.min(...times);
  }

  dueRetries(now: number, limit: number): Promise<ScheduleRunRow[]> {
    return this.db.all<ScheduleRunRow>("SELECT * FROM schedule_runs WHERE status = 'retry_wait' AND retry_at <= ? ORDER BY retry_at LIMIT ?", [now, limit]);
  }

  waitingRuns(limit: number): Promise<ScheduleRunRow[]> {
    return this.db.all<ScheduleRunRow>("SELECT * FROM schedule_runs WHERE status = 'waiting_dependency' ORDER BY updated_at, id LIMIT ?", [limit]);
  }

  runsWithEndedSession(limit: number): Promise<ScheduleRunRow[]> {
    return this.db.all<ScheduleRunRow>(
      "SELECT r.* FROM schedule_runs r JOIN sessions s ON s.id = r.session_id WHERE r.status = 'running' AND s.status <> 'running' ORDER BY r.lease_expires_at LIMIT ?",
      [limit],
    );
  }

  runOfSession(sessionId: string): Promise<ScheduleRunRow | null> {
    return this.one<ScheduleRunRow>("SELECT * FROM schedule_runs WHERE session_id = ? LIMIT 1", [sessionId]);
  }

  chainChild(runId: string): Promise<ScheduleRunRow | null> {
    // At most one: takeRetry lets one transaction make a run's retry.
    return this.one<ScheduleRunRow>("SELECT * FROM schedule_runs WHERE chain_parent_id = ? LIMIT 1", [runId]);
  }

  async queueCounts(): Promise<QueueCounts[]> {
    const rows = await this.db.all<{ queue: string; status: string; n: number; oldest: number | null }>(
      `SELECT queue, status, CAST(COUNT(*) AS integer) AS n, MIN(created_at) AS oldest FROM schedule_runs WHERE status IN ${ACTIVE} AND queue IS NOT NULL AND (status <> 'retry_wait' OR retry_at IS NOT NULL) GROUP BY status, queue`,
      [],
    );
    const byQueue = new Map<string, QueueCounts>();
    for (const row of rows) {
      const counts = byQueue.get(row.queue) ?? { queue: row.queue, running: 0, queued: 0, waiting: 0, oldest_queued_at: null };
      const n = Number(row.n);
      if (row.status === "running") counts.running += n;
      else if (row.status === "queued") (counts.queued += n), (counts.oldest_queued_at = row.oldest === null ? null : Number(row.oldest));
      else counts.waiting += n;
      byQueue.set(row.queue, counts);
    }
    return [...byQueue.values()];
  }

  async insertDependencies(rows: readonly ScheduleDepRow[]): Promise<void> {
    for (const row of rows) {
      await this.db.run("INSERT INTO schedule_run_deps (run_id, depends_on_kind, depends_on_id, created_at) VALUES (?, ?, ?, ?)", [
        row.run_id,
        row.depends_on_kind,
        row.depends_on_id,
        row.created_at,
      ]);
    }
  }

  dependenciesOf(runId: string): Promise<ScheduleDepRow[]> {
    return this.db.all<ScheduleDepRow>("SELECT * FROM schedule_run_deps WHERE run_id = ? ORDER BY depends_on_id", [runId]);
  }

  async dependentsOf(targetId: string): Promise<string[]> {
    const rows = await this.db.all<{ run_id: string }>("SELECT run_id FROM schedule_run_deps WHERE depends_on_id = ? ORDER BY run_id", [targetId]);
    return rows.map((r) => r.run_id);
  }

  linkSession(runId: string, sessionId: string, hostId: string): Promise<number> {
    return this.db.run("UPDATE schedule_runs SET session_id = ? WHERE id = ? AND status = 'running' AND leased_by = ? AND (session_id IS NULL OR session_id = ?)", [
      sessionId,
      runId,
      hostId,
      sessionId,
    ]);
  }

  takeRetry(runId: string): Promise<number> {
    return this.db.run("UPDATE schedule_runs SET retry_at = NULL WHERE id = ? AND status = 'retry_wait' AND retry_at IS NOT NULL", [runId]);
  }

  async recordHost(row: WatchHostRow): Promise<void> {
    await this.db.run(
      "INSERT INTO watch_hosts (host_id, host_name, labels, seen_at) VALUES (?, ?, ?, ?) " +
        "ON CONFLICT (host_id) DO UPDATE SET host_name = excluded.host_name, labels = excluded.labels, seen_at = excluded.seen_at",
      [row.host_id, row.host_name, row.labels, row.seen_at],
    );
  }

  listHosts(): Promise<WatchHostRow[]> {
    return this.db.all<WatchHostRow>("SELECT * FROM watch_hosts ORDER BY host_id", []);
  }

  renewLeaseOfLeg(legId: string, at: number): Promise<number> {
    return this.db.run(
      `UPDATE schedule_runs SET lease_expires_at = ? + COALESCE(lease_seconds, ${DEFAULT_LEASE_SECONDS}) ` +
        "WHERE session_id = (SELECT session_id FROM legs WHERE id = ?) AND status = 'running' AND lease_expires_at < ? + COALESCE(lease_seconds, " +
        `${DEFAULT_LEASE_SECONDS})`,
      [at, legId, at],
    );
  }
}

/** `?` placeholders numbered for PostgreSQL (`$1`, `$2`, …); li's statements hold no `?` inside literals. */
export function numberedPlaceholders(text: string): string {
  let n = 0;
  return text.replace(/\?/g, () => `$${++n}`);
}
