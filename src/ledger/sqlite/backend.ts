// The SQLite backend. Every statement is a prepared bun:sqlite statement (importing drizzle costs ~5 ms
// of start-up in the binary, STACK.md); drizzle defines the schema and generates the migrations only.

import type { Database } from "bun:sqlite";
import { POLICIES, type EntityKind } from "../../lifecycle/policy.ts";
import type { Backend, TransactionOptions, Tx } from "../backend.ts";
import type { AdminEventRow, BranchRow, EntityRow, LegPatch, LegRow, MessageRow, SessionLegState, SpoolReplayRow, StatusRow, StatusSet, TransitionRow, RunningSession } from "../rows.ts";
import * as legStore from "./legs.ts";
import type { LedgerUnavailableError } from "../../util/errors.ts";
import { asLedgerError } from "./errors.ts";
import { hostClock } from "../../util/host-clock.ts";
import { withBusyRetry } from "./migrate.ts";
import { SqliteReads } from "./reads.ts";
import { SqliteNotifyStore } from "./notify.ts";
import { CronStatements } from "../rules/cron.ts";
import type { CronStore } from "../cron-store.ts";
import * as sweeps from "./sweeps.ts";
import type { PruneSqlStatement } from "../rules/prune.ts";
import type { ChangeWake, WakeOptions } from "../wake.ts";
import type { WatcherLock } from "../watcher-lock.ts";
import { nextSeqStatement } from "../rules/seq.ts";
import { ScheduleStatements } from "../rules/schedule.ts";
import { scheduleRunner } from "./schedule.ts";

const NEXT_SEQ = nextSeqStatement("MAX");

/** Serializes transactions of one process on its one connection (BEGIN…COMMIT is per connection). */
class Mutex {
  private tail: Promise<void> = Promise.resolve();
  lock(): Promise<() => void> {
    let release!: () => void;
    const next = new Promise<void>((r) => (release = r));
    const ready = this.tail.then(() => release);
    this.tail = this.tail.then(() => next);
    return ready;
  }
}

export class SqliteBackend implements Backend {
  private readonly mutex = new Mutex();
  private readonly tx: SqliteTx;
  readonly reads: SqliteReads;
  readonly notify: SqliteNotifyStore;
  readonly schedule: ScheduleStatements;
  readonly cron: CronStore;

  private readonly clock: () => number;

  /** `options.now`: an injected clock (tests, `LedgerOptions.now`); the host's otherwise. */
  constructor(
    readonly db: Database,
    readonly location: string,
    options: { now?: () => number } = {},
  ) {
    // On SQLite every writer shares one host, so the host's clock is the ledger's.
    this.clock = options.now ?? hostClock;
    this.reads = new SqliteReads(db);
    this.notify = new SqliteNotifyStore(db, () => this.clock());
    this.schedule = new ScheduleStatements(scheduleRunner(db));
    this.cron = new CronStatements(scheduleRunner(db));
    this.tx = new SqliteTx(db, this.notify, this.schedule, this.cron);
  }

  now(): number {
    return this.clock();
  }

  async transaction<T>(fn: (tx: Tx) => T | Promise<T>, options: TransactionOptions = {}): Promise<T> {
    const release = await this.mutex.lock();
    try {
      // BEGIN IMMEDIATE takes the write lock before the first read (the guarded write relies on it).
      if (options.lockWaitMs === undefined) withBusyRetry(() => this.db.run("BEGIN IMMEDIATE"));
      else this.beginWaitingAtMost(options.lockWaitMs);
      try {
        const result = await fn(this.tx);
        this.db.run("COMMIT");
        return result;
      } catch (error) {
        if (this.db.inTransaction) this.rollbackQuietly();
        throw error;
      }
    } catch (error) {
      // A full disk, a read-only or foreign file: one error naming the ledger (exit 78), not SQLite's raw text.
      throw asLedgerError(error, this.location) ?? error;
    } finally {
      release();
    }
  }

  // Lookups the views also make: the same prepared statements.
  async getEntity(kind: EntityKind, id: string): Promise<EntityRow | null> {
    return this.reads.entityRow(kind, id);
  }

  async findIdsByPrefix(kind: EntityKind, prefix: string, limit: number): Promise<string[]> {
    return this.reads.idsWithPrefix(kind, prefix, limit);
  }

  async listTransitions(kind: EntityKind, id: string): Promise<TransitionRow[]> {
    return this.reads.transitionsOf(kind, id);
  }

  async listAdminEvents(kind: EntityKind, id: string): Promise<AdminEventRow[]> {
    return this.reads.adminEventsOf(kind, id);
  }

  async getLeg(id: string): Promise<LegRow | null> {
    return legStore.getLeg(this.db, id);
  }

  async listLegs(sessionId: string): Promise<LegRow[]> {
    return this.reads.legsOf(sessionId);
  }

  async runIdTaken(runId: string): Promise<boolean> {
    return legStore.runIdTaken(this.db, runId);
  }

  async getBranch(id: string): Promise<BranchRow | null> {
    return legStore.getBranch(this.db, id);
  }

  async listMessages(sessionId: string): Promise<MessageRow[]> {
    return legStore.listMessages(this.db, sessionId);
  }

  async sessionLegState(sessionId: string): Promise<SessionLegState | null> {
    return legStore.sessionLegState(this.db, sessionId);
  }

  // Sweep reads (SPEC §12), delegated to sweeps.ts.
  async listRunningSessions(options: { afterId?: string | null; limit: number }): Promise<RunningSession[]> {
    return sweeps.listRunningSessions(this.db, options);
  }

  async getSweepSession(id: string): Promise<RunningSession | null> {
    return sweeps.getSweepSession(this.db, id);
  }

  async listPruneCandidates(options: { terminalStatuses: readonly string[]; cutoff: number; afterId: string | null; limit: number }): Promise<string[]> {
    return sweeps.listPruneCandidates(this.db, options);
  }

  async countPruneCandidates(options: { terminalStatuses: readonly string[]; cutoff: number }): Promise<number> {
    return sweeps.countPruneCandidates(this.db, options);
  }

  async legsUsingDirectory(dir: string) {
    return sweeps.legsUsingDirectory(this.db, dir);
  }

  async afterBulkBatch(): Promise<void> {
    sweeps.passiveCheckpoint(this.db);
  }

  ledgerError(error: unknown): LedgerUnavailableError | null {
    return asLedgerError(error, this.location);
  }

  async wake(options: WakeOptions = {}): Promise<ChangeWake> {
    // Loaded here, not at start-up: only waiting commands watch files.
    const { watchSqliteFile } = await import("./wake.ts");
    return watchSqliteFile(this.location, options);
  }

  async lockWatcher(hostId: string): Promise<WatcherLock> {
    // A kernel lock on a file beside the database, one file per host: hosts that share a kernel (containers
    // told apart by LI_HOST_ID, one database bind-mounted into each) all see every file lock.
    const { holdExclusiveLock } = await import("./watch-lock.ts");
    const held = holdExclusiveLock(`${this.location}.watch-lock.${hostId.replace(/[^A-Za-z0-9._-]/g, "_").slice(0, 128)}`);
    return { path: held.path, ensureHeld: async () => {}, release: async () => held.release() };
  }

  /** BEGIN IMMEDIATE waiting at most `ms` (and never past the connection's own busy timeout), with no retries; that timeout is restored after. */
  private beginWaitingAtMost(ms: number): void {
    this.busyTimeoutMs ??= this.db.query<{ timeout: number }, []>("PRAGMA busy_timeout").get()?.timeout ?? 5000;
    this.db.run(`PRAGMA busy_timeout = ${Math.max(0, Math.floor(Math.min(ms, this.busyTimeoutMs)))}`);
    try {
      this.db.run("BEGIN IMMEDIATE");
    } finally {
      this.db.run(`PRAGMA busy_timeout = ${Math.floor(this.busyTimeoutMs)}`);
    }
  }

  private busyTimeoutMs: number | undefined;

  /** After a failed statement; a ROLLBACK that fails too (an I/O error) must not hide the first error. */
  private rollbackQuietly(): void {
    try {
      this.db.run("ROLLBACK");
    } catch {
      // SQLite rolls a broken transaction back itself when the connection closes.
    }
  }

  close(): void {
    this.db.close();
  }
}

/** Write operations; every method runs inside SqliteBackend.transaction, under the write lock. */
class SqliteTx implements Tx {
  private readonly casSql = new Map<string, string>();

  constructor(
    private readonly db: Database,
    readonly notify: SqliteNotifyStore,
    readonly schedule: ScheduleStatements,
    readonly cron: CronStore,
  ) {}

  readStatus(kind: EntityKind, id: string): StatusRow | null {
    const sqlText = `SELECT status, updated_at${kind === "session" ? ", current_leg_id" : ""} FROM ${POLICIES[kind].table} WHERE id = ?`;
    return (this.db.query(sqlText).get(id) as StatusRow | null) ?? null;
  }

  casStatus(kind: EntityKind, id: string, guard: { status: string | null; updatedAt?: number }, set: StatusSet, extra: Record<string, unknown>): number {
    const extraKeys = Object.keys(extra).sort();
    const withVersion = guard.updatedAt !== undefined;
    const key = `${kind}|${withVersion}|${extraKeys.join(",")}`;
    let sqlText = this.casSql.get(key);
    if (!sqlText) {
      // Column names come from the registry's allowlist (validated before the transaction), never from input.
      const columns = ["status", "status_reason_code", "status_reason_summary", "status_evidence_refs", "updated_at", ...extraKeys];
      // NULL-safe compare-and-set in the statement itself: `status IS ?` matches NULL too.
      sqlText =
        `UPDATE ${POLICIES[kind].table} SET ${columns.map((c) => `"${c}" = ?`).join(", ")} WHERE id = ? AND status IS ?` +
        (withVersion ? " AND updated_at = ?" : "");
      this.casSql.set(key, sqlText);
    }
    const params: unknown[] = [set.status, set.status_reason_code, set.status_reason_summary, set.status_evidence_refs, set.updated_at];
    for (const column of extraKeys) params.push(extra[column] ?? null);
    params.push(id, guard.status);
    if (withVersion) params.push(guard.updatedAt);
    return this.db.query(sqlText).run(...(params as [])).changes;
  }

  insertTransition(row: Omit<TransitionRow, "seq">): number {
    // Assigned under the write lock, so seq order is commit order; never reused after a prune (rules/seq.ts).
    const { seq } = this.db.query(NEXT_SEQ).get() as { seq: number };
    this.db
      .query(
        "INSERT INTO status_transitions (id, seq, entity_type, entity_id, previous_status, status, reason_code, reason_summary, evidence_refs, source, actor, created_at, metadata, terminal_event, leg_id) " +
          "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
      )
      .run(row.id, seq, row.entity_type, row.entity_id, row.previous_status, row.status, row.reason_code, row.reason_summary, row.evidence_refs, row.source, row.actor, row.created_at, row.metadata, row.terminal_event, row.leg_id ?? null);
    return seq;
  }

  insertAdminEvent(row: AdminEventRow): void {
    this.db
      .query("INSERT INTO admin_events (id, event_type, entity_type, entity_id, actor, justification, payload, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
      .run(row.id, row.event_type, row.entity_type, row.entity_id, row.actor, row.justification, row.payload, row.created_at);
  }

  insertEntity(kind: EntityKind, row: Record<string, unknown>): void {
    const columns = Object.keys(row);
    // Column names come from li's own creation code (Ledger.prepareCreate's allowlist), never from input.
    for (const column of columns) if (!/^[a-z_]+$/.test(column)) throw new Error(`not a column name: ${column}`);
    const sqlText = `INSERT INTO ${POLICIES[kind].table} (${columns.map((c) => `"${c}"`).join(", ")}) VALUES (${columns.map(() => "?").join(", ")})`;
    this.db.query(sqlText).run(...(columns.map((c) => row[c] ?? null) as []));
  }

  getEntity(kind: EntityKind, id: string): EntityRow | null {
    return (this.db.query(`SELECT * FROM ${POLICIES[kind].table} WHERE id = ?`).get(id) as EntityRow | null) ?? null;
  }

  insertBranch(row: BranchRow): void {
    legStore.insertBranch(this.db, row);
  }

  insertBranchIfAbsent(row: BranchRow): boolean {
    return legStore.insertBranchIfAbsent(this.db, row);
  }

  getBranch(id: string): BranchRow | null {
    return legStore.getBranch(this.db, id);
  }

  relinkInvocation(sessionId: string, invocationId: string): void {
    legStore.relinkInvocation(this.db, sessionId, invocationId);
  }

  rebindBranch(id: string, sessionId: string, now: number): number {
    return legStore.rebindBranch(this.db, id, sessionId, now);
  }

  insertLeg(row: LegRow): void {
    legStore.insertLeg(this.db, row);
  }

  updateLeg(id: string, patch: LegPatch, opts?: { onlyOpen?: boolean }): number {
    return legStore.updateLeg(this.db, id, patch, opts);
  }

  async refreshHeartbeat(legId: string, at: number): Promise<number> {
    const changed = legStore.refreshHeartbeat(this.db, legId, at);
    // A leased run's lease is renewed by its leg's heartbeat (§19), in the same transaction.
    if (changed > 0) await this.schedule.renewLeaseOfLeg(legId, at);
    return changed;
  }

  getLeg(id: string): LegRow | null {
    return legStore.getLeg(this.db, id);
  }

  nextLegSeq(sessionId: string): number {
    return legStore.nextLegSeq(this.db, sessionId);
  }

  insertMessage(row: MessageRow): void {
    legStore.insertMessage(this.db, row);
  }

  sessionLegState(sessionId: string): SessionLegState | null {
    return legStore.sessionLegState(this.db, sessionId);
  }

  spoolReplayed(id: string): boolean {
    return this.db.query("SELECT 1 FROM spool_replays WHERE id = ?").get(id) !== null;
  }

  recordSpoolReplay(row: SpoolReplayRow): void {
    this.db
      .query("INSERT INTO spool_replays (id, session_id, leg_id, host_id, spooled_at, replayed_at) VALUES (?, ?, ?, ?, ?, ?)")
      .run(row.id, row.session_id, row.leg_id, row.host_id, row.spooled_at, row.replayed_at);
  }

  // Sweep re-checks and prune statements (SPEC §12), delegated to sweeps.ts.
  readSweepGuard(sessionId: string) {
    return sweeps.readSweepGuard(this.db, sessionId);
  }

  pruneStatement(statement: PruneSqlStatement, sessionIds: readonly string[], options: { terminalStatuses: readonly string[]; cutoff: number }) {
    return sweeps.pruneStatement(this.db, statement, sessionIds, options);
  }

  legsOfSessions(sessionIds: readonly string[]) {
    return sweeps.legsOfSessions(this.db, sessionIds);
  }
}
