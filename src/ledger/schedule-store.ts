// The storage contract for queues, scheduled runs' bookkeeping and their dependencies (SPEC §19): rows in,
// rows out, no policy. Status changes of a run never go through here: only the guarded transition writes them.

import type { Awaitable } from "../util/awaitable.ts";
import type { QueueRow, QueueScope, ScheduleDepRow, ScheduleRunRow, WatchHostRow } from "./rows.ts";

/** A queue's limits as `li queue set` changes them (absent = unchanged). */
export interface QueuePatch {
  parallel?: number;
  scope?: QueueScope;
  paused?: boolean;
  lease_attempts?: number;
}

/** One queue's counts for `li queue ls` (§19). */
export interface QueueCounts {
  queue: string;
  running: number;
  queued: number;
  /** waiting_dependency and retry_wait. */
  waiting: number;
  /** created_at of the oldest queued run, or null. */
  oldest_queued_at: number | null;
}

/** Reads and writes of §19's bookkeeping. Writes only inside `Backend.transaction` (via `tx.schedule`). */
export interface ScheduleStore {
  getQueue(name: string): Awaitable<QueueRow | null>;
  listQueues(): Awaitable<QueueRow[]>;
  /**
   * The queues a dispatch may lease from now: not paused, holding a queued run (by name). One statement,
   * so a watcher's pass reads every queue's state in one round trip, and a queue with nothing queued costs
   * no write transaction.
   */
  queuesToDispatch(): Awaitable<QueueRow[]>;
  /** Inserts the queue unless it exists (a first submit to a queue creates it with the defaults). */
  ensureQueue(row: QueueRow): Awaitable<void>;
  /** Changes a queue's limits; returns rows changed (0: no such queue). */
  updateQueue(name: string, patch: QueuePatch, now: number): Awaitable<number>;
  /**
   * The queue row, locked for the rest of the transaction where the backend has row locks (PostgreSQL:
   * FOR UPDATE), so leases of one queue serialize across hosts and its running count is exact.
   */
  lockQueue(name: string): Awaitable<QueueRow | null>;

  getRun(id: string): Awaitable<ScheduleRunRow | null>;
  /** The queue's oldest queued runs (created_at, then id), skipping rows another transaction holds (SKIP LOCKED). */
  leaseCandidates(queue: string, limit: number): Awaitable<ScheduleRunRow[]>;
  /** Running runs of a queue: on one host (`hostId`), or on every host (null). */
  countRunning(queue: string, hostId: string | null): Awaitable<number>;
  /** Queued runs of the queue created before this one (its place in the queue, 0 = next). */
  queuedAhead(queue: string, createdAt: number, id: string): Awaitable<number>;
  /**
   * The queue's newest `limit` queued runs (newest first) and how many it holds queued in all, read in one
   * statement (one snapshot): a run in the tail stands at `total - 1 - its index` without counting the runs
   * ahead of it, so a page of recent runs costs the page, not the queue (li ls).
   */
  queuedTail(queue: string, limit: number): Awaitable<{ total: number; ids: string[] }>;
  /** Running runs whose lease ran out by `now`, oldest expiry first. */
  expiredLeases(now: number, limit: number): Awaitable<ScheduleRunRow[]>;
  /**
   * The earliest time a scheduled run falls due without a commit: a retry_wait run's retry_at, and with
   * `leases` a running run's lease expiry (re-queued by the elected watcher), later than `after`. Null: none.
   */
  nextTimedAt(after: number, leases: boolean): Awaitable<number | null>;
  /** Runs in retry_wait whose next attempt is due by `now`. */
  dueRetries(now: number, limit: number): Awaitable<ScheduleRunRow[]>;
  /** Runs waiting for dependencies, longest waiting first. */
  waitingRuns(limit: number): Awaitable<ScheduleRunRow[]>;
  /** Running runs whose linked session is no longer running (its leg ended; the run has not followed yet). */
  runsWithEndedSession(limit: number): Awaitable<ScheduleRunRow[]>;
  /** The run the leg's session was started for, if any. */
  runOfSession(sessionId: string): Awaitable<ScheduleRunRow | null>;
  /** The retry of this run (its chain child), if one was made. */
  chainChild(runId: string): Awaitable<ScheduleRunRow | null>;
  queueCounts(): Awaitable<QueueCounts[]>;

  insertDependencies(rows: readonly ScheduleDepRow[]): Awaitable<void>;
  dependenciesOf(runId: string): Awaitable<ScheduleDepRow[]>;
  /** Runs that wait for `targetId` (any kind). */
  dependentsOf(targetId: string): Awaitable<string[]>;

  /**
   * Links the leased run to the session of the leg started for it: only while the run is running, leased
   * by `hostId` and has no other session (a continuing leg of the same session links again, harmlessly). Returns rows changed (0: the lease is not ours any more).
   */
  linkSession(runId: string, sessionId: string, hostId: string): Awaitable<number>;
  /**
   * Marks a run in retry_wait as retried (its next attempt, a new chained run, is being created in this
   * transaction): clears retry_at, once. Returns rows changed (0: another process made the retry first).
   */
  takeRetry(runId: string): Awaitable<number>;
  /** Records the labels a host's dispatcher offers (li watch, a foreground queued leg). */
  recordHost(row: WatchHostRow): Awaitable<void>;
  listHosts(): Awaitable<WatchHostRow[]>;
  /** Extends the lease of the run whose leg this is to `at` + its lease_seconds (a heartbeat, §19). */
  renewLeaseOfLeg(legId: string, at: number): Awaitable<number>;
}
