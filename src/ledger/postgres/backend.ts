// The PostgreSQL backend (SPEC §14): the same Backend, Tx and LedgerReads contracts as SQLite, on Bun's
// SQL client. The guarded write locks the row it reads (`SELECT … FOR UPDATE`) and re-asserts the status
// in the UPDATE (`IS NOT DISTINCT FROM`); `seq` is assigned under a transaction-scoped advisory lock held
// to commit, so seq order is commit order and a consumer watermark never skips an event (issue 11 item 4).
// Times come from the server's clock (clock.ts) unless a test injects one.

import type { SQL } from "bun";
import { POLICIES, type EntityKind } from "../../lifecycle/policy.ts";
import type { LedgerUnavailableError } from "../../util/errors.ts";
import type { ChangeWake, ListenState } from "../wake.ts";
import type { WatcherLock } from "../watcher-lock.ts";
import type { Backend, ConnectionBudget, TransactionOptions, Tx } from "../backend.ts";
import type { AdminEventRow, BranchRow, EntityRow, LegDirs, LegPatch, LegRow, MessageRow, RunningSession, SessionLegState, SpoolReplayRow, StatusRow, StatusSet, SweepGuardRow, TransitionRow } from "../rows.ts";
import type { NotifyStore } from "../notify-store.ts";
import type { PruneStatementResult } from "../sweep-store.ts";
import type { PruneSqlStatement } from "../rules/prune.ts";
import type { PgConnection } from "./connection.ts";
import * as legStore from "./legs.ts";
import * as pgSweeps from "./sweeps.ts";
import { LOCK_NAMESPACE } from "./migrate.ts";
import { PgNotifyStore } from "./notify.ts";
import { CronStatements } from "../rules/cron.ts";
import type { CronStore } from "../cron-store.ts";
import { PgReads } from "./reads.ts";
import { listenForChanges, listenForKillRequest, listenForKillRequests, listenForWatcher } from "./wake.ts";
import { holdPgWatcherLock } from "./watch-lock.ts";
import { closedConnections } from "./client.ts";
import { laterOf, serverStart } from "./availability.ts";
import { num } from "./row-numbers.ts";
import { nextSeqStatement } from "../rules/seq.ts";
import { ScheduleStatements } from "../rules/schedule.ts";
import { scheduleRunner } from "./schedule.ts";

const NEXT_SEQ = nextSeqStatement("GREATEST");

/** The statements of the sweeps (sweeps.ts, the twin of sqlite/sweeps.ts). */
interface PgSweeps {
  listRunningSessions(sql: SQL, options: { afterId?: string | null; limit: number }): Promise<RunningSession[]>;
  getSweepSession(sql: SQL, id: string): Promise<RunningSession | null>;
  listPruneCandidates(sql: SQL, options: { terminalStatuses: readonly string[]; cutoff: number; afterId: string | null; limit: number }): Promise<string[]>;
  countPruneCandidates(sql: SQL, options: { terminalStatuses: readonly string[]; cutoff: number }): Promise<number>;
  legsUsingDirectory(sql: SQL, dir: string): Promise<LegDirs[]>;
  readSweepGuard(sql: SQL, sessionId: string): Promise<SweepGuardRow | null>;
  pruneStatement(sql: SQL, statement: PruneSqlStatement, sessionIds: readonly string[], options: { terminalStatuses: readonly string[]; cutoff: number }): Promise<PruneStatementResult>;
  legsOfSessions(sql: SQL, sessionIds: readonly string[]): Promise<LegDirs[]>;
}


/** SQLSTATEs of a transaction the server rolled back to let another go on (deadlock, serialization failure). */
const RETRYABLE_SQLSTATES: ReadonlySet<string> = new Set(["40P01", "40001"]);
/** A deadlock that recurs this often is not bad luck: let it be seen. */
const DEADLOCK_ATTEMPTS = 5;

export interface PgBackendOptions {
  /** A clock a test controls; otherwise the server's clock (clock.ts). */
  now?: () => number;
  /** The server's start in Unix seconds, instead of asking it (tests: availability.ts's LI_TEST_PG_STARTED_AT). */
  serverStartedAt?: number | null;
}

export class PgBackend implements Backend {
  readonly reads: PgReads;
  readonly notify: NotifyStore;
  readonly schedule: ScheduleStatements;
  readonly cron: CronStore;
  private readonly sweeps: PgSweeps;
  private readonly injectedNow: (() => number) | undefined;
  private readonly injectedStart: number | null;

  constructor(
    private readonly conn: PgConnection,
    options: PgBackendOptions = {},
  ) {
    this.injectedNow = options.now;
    this.injectedStart = options.serverStartedAt ?? null;
    this.reads = new PgReads((fn) => conn.run(fn));
    this.notify = new PgNotifyStore((fn) => conn.run(fn), () => this.now());
    this.schedule = new ScheduleStatements(scheduleRunner((fn) => conn.run(fn), false));
    this.cron = new CronStatements(scheduleRunner((fn) => conn.run(fn), false));
    this.sweeps = pgSweeps;
  }

  get location(): string {
    return this.conn.name;
  }

  /** Connected, and the server's clock measured: `now()` is the server's from here on (an injected clock needs neither). */
  async ready(): Promise<void> {
    // Bounded and waited for as any call (connection.ts), so its failure is the one later calls cut short report.
    if (!this.injectedNow) await this.conn.bounded(async () => {});
  }

  cutCallsAt(atMs: number | null): void {
    this.conn.cutCallsAt(atMs);
  }

  /** §20: a leg gives its connections back while its command runs; the watcher LISTENs for every leg of its host. */
  get connections(): ConnectionBudget {
    const conn = this.conn;
    return {
      key: `${conn.name}#${conn.schema}`,
      release: () => conn.release(),
      // The watcher's LISTEN client: one connection for its wake-ups and its legs' kill requests.
      onAnyKillRequest: (onNotice) => listenForKillRequests(conn.listener(), conn.schema, onNotice),
    };
  }

  /** A kill request on leg `legId` (li kill from another host, §12.2): LISTEN li_kill, re-read on every (re)subscription. */
  onKillRequest(legId: string, onRequest: () => void): () => void {
    // On a client of its own, which outlives a released pool (§20: a leg's one connection).
    return listenForKillRequest(this.conn.listener(), this.conn.schema, legId, onRequest);
  }

  /** Unix seconds on the ledger's clock: the server's (an injected clock wins). */
  now(): number {
    return this.injectedNow ? this.injectedNow() : this.conn.clock.now();
  }

  /**
   * Runs `fn` in one transaction (READ COMMITTED; the guarded write's row locks and the CAS keep it safe).
   * A transaction the server aborted to break a deadlock (two writers locking the same rows, or a row and
   * the seq lock, in opposite orders) is run again from the start: it wrote nothing, and `fn` touches
   * storage only through `tx`, so the retry decides afresh on what is committed by then.
   */
  async transaction<T>(fn: (tx: Tx) => T | Promise<T>, options: TransactionOptions = {}): Promise<T> {
    // Within one call's deadline (connection.ts): a commit whose answer never comes is retried by the
    // caller, and the guarded write then finds its own outcome already there (one transition, not two).
    return this.conn.bounded(async (sql) => {
      for (let attempt = 1; ; attempt++) {
        try {
          const result = (await sql.begin(async (handle) => fn(new PgTx(handle, this.conn.schema, this.sweeps, () => this.now())))) as T;
          this.conn.reachability.reach();
          return result;
        } catch (error) {
          if (attempt < DEADLOCK_ATTEMPTS && RETRYABLE_SQLSTATES.has((error as { errno?: string }).errno ?? "")) continue;
          throw this.conn.fault(error);
        }
      }
    }, options.withinMs);
  }

  private run<T>(fn: (sql: SQL) => Promise<T>): Promise<T> {
    return this.conn.run(fn);
  }

  getEntity(kind: EntityKind, id: string): Promise<EntityRow | null> {
    return this.reads.entityRow(kind, id);
  }

  findIdsByPrefix(kind: EntityKind, prefix: string, limit: number): Promise<string[]> {
    return this.reads.idsWithPrefix(kind, prefix, limit);
  }

  listTransitions(kind: EntityKind, id: string): Promise<TransitionRow[]> {
    return this.reads.transitionsOf(kind, id);
  }

  listAdminEvents(kind: EntityKind, id: string): Promise<AdminEventRow[]> {
    return this.reads.adminEventsOf(kind, id);
  }

  getLeg(id: string): Promise<LegRow | null> {
    return this.run((sql) => legStore.getLeg(sql, id));
  }

  listLegs(sessionId: string): Promise<LegRow[]> {
    return this.reads.legsOf(sessionId);
  }

  runIdTaken(runId: string): Promise<boolean> {
    return this.run((sql) => legStore.runIdTaken(sql, runId));
  }

  getBranch(id: string): Promise<BranchRow | null> {
    return this.run((sql) => legStore.getBranch(sql, id));
  }

  listMessages(sessionId: string): Promise<MessageRow[]> {
    return this.run((sql) => legStore.listMessages(sql, sessionId));
  }

  sessionLegState(sessionId: string): Promise<SessionLegState | null> {
    return this.run((sql) => legStore.sessionLegState(sql, sessionId));
  }

  // Sweep reads (SPEC §12).
  listRunningSessions(options: { afterId?: string | null; limit: number }): Promise<RunningSession[]> {
    return this.run((sql) => this.sweeps.listRunningSessions(sql, options));
  }

  getSweepSession(id: string): Promise<RunningSession | null> {
    return this.run((sql) => this.sweeps.getSweepSession(sql, id));
  }

  listPruneCandidates(options: { terminalStatuses: readonly string[]; cutoff: number; afterId: string | null; limit: number }): Promise<string[]> {
    return this.run((sql) => this.sweeps.listPruneCandidates(sql, options));
  }

  countPruneCandidates(options: { terminalStatuses: readonly string[]; cutoff: number }): Promise<number> {
    return this.run((sql) => this.sweeps.countPruneCandidates(sql, options));
  }

  legsUsingDirectory(dir: string): Promise<LegDirs[]> {
    return this.run((sql) => this.sweeps.legsUsingDirectory(sql, dir));
  }

  /** SQLite checkpoints its WAL here; PostgreSQL's own background writer needs no help. */
  async afterBulkBatch(): Promise<void> {}

  ledgerError(error: unknown): LedgerUnavailableError | null {
    return this.conn.ledgerError(error);
  }

  /** The server's start as last read, and the connection drops counted when it was asked (a restart drops every connection). */
  private startSeen: { drops: number; started: number | null } | null = null;

  /**
   * Since when the ledger has been serving this process (§17 item 5): the later of the server's start
   * and this process's last regain of the ledger after losing it (availability.ts). The start is asked of
   * the server again only after a connection of this process closed or a call found the ledger
   * unreachable (a restart does both): a watcher's sweep every 30 s costs no round trip for it.
   */
  async availableSince(): Promise<number | null> {
    let started = this.injectedStart;
    if (started === null) {
      const drops = closedConnections() + this.conn.reachability.losses;
      if (this.startSeen?.drops === drops) started = this.startSeen.started;
      else {
        started = await this.run((sql) => serverStart(sql));
        this.startSeen = { drops, started };
      }
    }
    return laterOf(started, this.conn.reachability.regainedAt);
  }

  /** LISTEN li_changes (wake.ts): moves on every commit of a history row or registration, and on every (re)connect. */
  async wake(): Promise<ChangeWake> {
    return listenForChanges(this.conn.pool(), this.conn.schema);
  }

  /** LISTEN on host `hostId`'s channel and the fleet's (wake.ts): a commit that concerns no work of this host wakes nothing. */
  async watcherWake(hostId: string, onListen?: (state: ListenState) => void): Promise<ChangeWake> {
    // A refusal is told as the ledger's (host, port, database; never a password).
    const describe = (error: unknown) => this.conn.ledgerError(error)?.message ?? String((error as Error)?.message ?? error);
    // On the LISTEN client, not the pool: a pool replaced after a call past its deadline would take the
    // LISTEN with it, unnoticed; the LISTEN client's drops are told (listen_down, listen_back).
    return listenForWatcher(() => this.conn.listener(), this.conn.schema, hostId, onListen, describe, (f) => this.conn.onListenerClosed(f));
  }

  /** The per-host advisory lock on a reserved connection (watch-lock.ts); its failures are named as the ledger's. */
  async lockWatcher(hostId: string): Promise<WatcherLock> {
    // The pool of the moment, not the one of today: a call past its deadline replaces the pool, and the
    // lock is then taken again on the new one. Every check is bounded like any call: a black-holed lock
    // connection must fail the watcher's pass, not hang it (§17).
    const pool = () => this.conn.pool();
    // The lock is asked about only after a connection of this process closed or a call found the ledger unreachable.
    const drops = () => closedConnections() + this.conn.reachability.losses;
    const lock = await this.conn.run(() => holdPgWatcherLock(pool, this.conn.schema, hostId, this.conn.name, drops));
    return {
      path: lock.path,
      ensureHeld: () => this.conn.run(() => lock.ensureHeld()),
      lead: () => this.conn.run(() => lock.lead!()),
      release: () => lock.release(),
    };
  }

  close(): void {
    this.conn.close();
  }
}

/** Write operations of one transaction (`sql.begin`'s handle: one reserved connection). */
class PgTx implements Tx {
  readonly notify: NotifyStore;
  readonly schedule: ScheduleStatements;
  readonly cron: CronStore;
  private seqLocked = false;

  constructor(
    private readonly sql: SQL,
    private readonly schema: string,
    private readonly sweeps: PgSweeps,
    now: () => number,
  ) {
    this.notify = PgNotifyStore.on(sql, now);
    this.schedule = new ScheduleStatements(scheduleRunner((fn) => fn(sql), true));
    this.cron = new CronStatements(scheduleRunner((fn) => fn(sql), true));
  }

  async readStatus(kind: EntityKind, id: string): Promise<StatusRow | null> {
    // The row lock: a concurrent guarded write on this row waits until we commit, then re-reads.
    const [row] = await this.sql.unsafe(`SELECT status, updated_at${kind === "session" ? ", current_leg_id" : ""} FROM ${POLICIES[kind].table} WHERE id = $1 FOR UPDATE`, [id]);
    return (row as StatusRow | undefined) ?? null;
  }

  async casStatus(kind: EntityKind, id: string, guard: { status: string | null; updatedAt?: number }, set: StatusSet, extra: Record<string, unknown>): Promise<number> {
    const extraKeys = Object.keys(extra).sort();
    // Column names come from the registry's allowlist (validated before the transaction), never from input.
    const columns = ["status", "status_reason_code", "status_reason_summary", "status_evidence_refs", "updated_at", ...extraKeys];
    const params: unknown[] = [set.status, set.status_reason_code, set.status_reason_summary, set.status_evidence_refs, set.updated_at];
    for (const column of extraKeys) params.push(extra[column] ?? null);
    params.push(id, guard.status);
    // NULL-safe compare-and-set in the statement itself.
    let text = `UPDATE ${POLICIES[kind].table} SET ${columns.map((c, i) => `"${c}" = $${i + 1}`).join(", ")} WHERE id = $${params.length - 1} AND status IS NOT DISTINCT FROM $${params.length}`;
    if (guard.updatedAt !== undefined) {
      params.push(guard.updatedAt);
      text += ` AND updated_at = $${params.length}`;
    }
    return (await this.sql.unsafe(text, params)).count;
  }

  async insertTransition(row: Omit<TransitionRow, "seq">): Promise<number> {
    if (!this.seqLocked) {
      // Held to commit: the next writer's seq statement (a statement after it gets the lock) sees our row, so
      // seq order is commit order. A separate statement, because a statement's snapshot predates its locks.
      await this.sql.unsafe("SELECT pg_advisory_xact_lock($1, hashtext($2))", [LOCK_NAMESPACE, `${this.schema}:seq`]);
      this.seqLocked = true;
    }
    // Never reused after a prune (rules/seq.ts): the high-water row advances in this statement, which
    // stays one round trip (a data-modifying CTE runs once; its seq feeds the history row).
    const [out] = await this.sql.unsafe(
      `WITH next AS (${NEXT_SEQ}) ` +
        "INSERT INTO status_transitions (id, seq, entity_type, entity_id, previous_status, status, reason_code, reason_summary, evidence_refs, source, actor, created_at, metadata, terminal_event, leg_id) " +
        "VALUES ($1, (SELECT seq FROM next), $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) RETURNING seq",
      [row.id, row.entity_type, row.entity_id, row.previous_status, row.status, row.reason_code, row.reason_summary, row.evidence_refs, row.source, row.actor, row.created_at, row.metadata, row.terminal_event, row.leg_id ?? null],
    );
    return num(out.seq)!;
  }

  async insertAdminEvent(row: AdminEventRow): Promise<void> {
    await this.sql.unsafe(
      "INSERT INTO admin_events (id, event_type, entity_type, entity_id, actor, justification, payload, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
      [row.id, row.event_type, row.entity_type, row.entity_id, row.actor, row.justification, row.payload, row.created_at],
    );
  }

  async insertEntity(kind: EntityKind, row: Record<string, unknown>): Promise<void> {
    const columns = Object.keys(row);
    // Column names come from li's own creation code (Ledger.prepareCreate's allowlist), never from input.
    for (const column of columns) if (!/^[a-z_]+$/.test(column)) throw new Error(`not a column name: ${column}`);
    await this.sql.unsafe(
      `INSERT INTO ${POLICIES[kind].table} (${columns.map((c) => `"${c}"`).join(", ")}) VALUES (${columns.map((_, i) => `$${i + 1}`).join(", ")})`,
      columns.map((c) => row[c] ?? null),
    );
  }

  async getEntity(kind: EntityKind, id: string): Promise<EntityRow | null> {
    const [row] = await this.sql.unsafe(`SELECT * FROM ${POLICIES[kind].table} WHERE id = $1`, [id]);
    return (row as EntityRow | undefined) ?? null;
  }

  insertBranch(row: BranchRow): Promise<void> {
    return legStore.insertBranch(this.sql, row);
  }

  insertBranchIfAbsent(row: BranchRow): Promise<boolean> {
    return legStore.insertBranchIfAbsent(this.sql, row);
  }

  getBranch(id: string): Promise<BranchRow | null> {
    return legStore.getBranch(this.sql, id);
  }

  rebindBranch(id: string, sessionId: string, now: number): Promise<number> {
    return legStore.rebindBranch(this.sql, id, sessionId, now);
  }

  relinkInvocation(sessionId: string, invocationId: string): Promise<void> {
    return legStore.relinkInvocation(this.sql, sessionId, invocationId);
  }

  insertLeg(row: LegRow): Promise<void> {
    return legStore.insertLeg(this.sql, row);
  }

  updateLeg(id: string, patch: LegPatch, opts?: { onlyOpen?: boolean }): Promise<number> {
    return legStore.updateLeg(this.sql, id, patch, opts);
  }

  async refreshHeartbeat(legId: string, at: number): Promise<number> {
    const changed = await legStore.refreshHeartbeat(this.sql, legId, at);
    // A leased run's lease is renewed by its leg's heartbeat (§19), in the same transaction.
    if (changed > 0) await this.schedule.renewLeaseOfLeg(legId, at);
    return changed;
  }

  getLeg(id: string): Promise<LegRow | null> {
    return legStore.getLeg(this.sql, id);
  }

  nextLegSeq(sessionId: string): Promise<number> {
    return legStore.nextLegSeq(this.sql, sessionId);
  }

  insertMessage(row: MessageRow): Promise<void> {
    return legStore.insertMessage(this.sql, row);
  }

  sessionLegState(sessionId: string): Promise<SessionLegState | null> {
    return legStore.sessionLegState(this.sql, sessionId);
  }

  async spoolReplayed(id: string): Promise<boolean> {
    // Two replayers of one host's spool serialize on the entry (held to commit): the second sees the first's row.
    await this.sql.unsafe("SELECT pg_advisory_xact_lock($1, hashtext($2))", [LOCK_NAMESPACE, `${this.schema}:spool:${id}`]);
    const rows = await this.sql.unsafe("SELECT 1 FROM spool_replays WHERE id = $1", [id]);
    return rows.length > 0;
  }

  async recordSpoolReplay(row: SpoolReplayRow): Promise<void> {
    await this.sql.unsafe("INSERT INTO spool_replays (id, session_id, leg_id, host_id, spooled_at, replayed_at) VALUES ($1, $2, $3, $4, $5, $6)", [
      row.id,
      row.session_id,
      row.leg_id,
      row.host_id,
      row.spooled_at,
      row.replayed_at,
    ]);
  }

  // Sweep re-checks and prune statements (SPEC §12).
  readSweepGuard(sessionId: string): Promise<SweepGuardRow | null> {
    return this.sweeps.readSweepGuard(this.sql, sessionId);
  }

  pruneStatement(statement: PruneSqlStatement, sessionIds: readonly string[], options: { terminalStatuses: readonly string[]; cutoff: number }): Promise<PruneStatementResult> {
    return this.sweeps.pruneStatement(this.sql, statement, sessionIds, options);
  }

  legsOfSessions(sessionIds: readonly string[]): Promise<LegDirs[]> {
    return this.sweeps.legsOfSessions(this.sql, sessionIds);
  }
}
