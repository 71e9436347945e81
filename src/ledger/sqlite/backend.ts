// The SQLite backend: drizzle over bun:sqlite, prepared statements on the hot path.

import type { Database } from "bun:sqlite";
import { and, asc, eq, gte, lt, sql, type SQL } from "drizzle-orm";
import { drizzle, type BunSQLiteDatabase } from "drizzle-orm/bun-sqlite";
import type { SQLiteTable } from "drizzle-orm/sqlite-core";
import { POLICIES, type EntityKind } from "../../lifecycle/policy.ts";
import type { AdminEventRow, Backend, BranchRow, EntityRow, LegPatch, LegRow, MessageRow, SessionLegState, StatusRow, StatusSet, TransitionRow, Tx } from "../backend.ts";
import * as legStore from "./legs.ts";
import { withBusyRetry } from "./open.ts";
import { SqliteReads } from "./reads.ts";
import { SqliteNotifyStore } from "./notify.ts";
import * as schema from "./schema.ts";
import * as sweeps from "./sweeps.ts";
import type { PruneStatement, RunningSession } from "../sweep-store.ts";

type AnyTable = SQLiteTable & { id: any; status: any; updated_at: any };

const tableOf = (kind: EntityKind) => schema.ENTITY_TABLES[kind] as unknown as AnyTable;

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

/** The next key after every string starting with `prefix`, for index range scans. */
export function prefixUpperBound(prefix: string): string {
  return prefix + "\uffff";
}

export class SqliteBackend implements Backend {
  readonly orm: BunSQLiteDatabase<typeof schema>;
  private readonly mutex = new Mutex();
  private readonly tx: SqliteTx;
  readonly reads: SqliteReads;
  readonly notify: SqliteNotifyStore;

  constructor(
    readonly db: Database,
    readonly location: string,
  ) {
    this.reads = new SqliteReads(db);
    this.orm = drizzle({ client: db, schema });
    this.notify = new SqliteNotifyStore(db);
    this.tx = new SqliteTx(this.orm, this.notify);
  }

  async transaction<T>(fn: (tx: Tx) => T | Promise<T>): Promise<T> {
    const release = await this.mutex.lock();
    try {
      // BEGIN IMMEDIATE takes the write lock before the first read (the guarded write relies on it).
      withBusyRetry(() => this.db.run("BEGIN IMMEDIATE"));
      try {
        const result = await fn(this.tx);
        this.db.run("COMMIT");
        return result;
      } catch (error) {
        if (this.db.inTransaction) this.db.run("ROLLBACK");
        throw error;
      }
    } finally {
      release();
    }
  }

  async getEntity(kind: EntityKind, id: string): Promise<EntityRow | null> {
    return this.tx.getEntity(kind, id);
  }

  async findIdsByPrefix(kind: EntityKind, prefix: string, limit: number): Promise<string[]> {
    const t = tableOf(kind);
    const rows = this.orm
      .select({ id: t.id })
      .from(t)
      .where(and(gte(t.id, prefix), lt(t.id, prefixUpperBound(prefix))))
      .orderBy(asc(t.id))
      .limit(limit)
      .all() as { id: string }[];
    return rows.map((r) => r.id);
  }

  async listTransitions(kind: EntityKind, id: string): Promise<TransitionRow[]> {
    const t = schema.statusTransitions;
    return this.orm
      .select()
      .from(t)
      .where(and(eq(t.entity_type, kind), eq(t.entity_id, id)))
      .orderBy(asc(t.created_at), asc(t.seq))
      .all() as TransitionRow[];
  }

  async listAdminEvents(kind: EntityKind, id: string): Promise<AdminEventRow[]> {
    const t = schema.adminEvents;
    return this.orm
      .select()
      .from(t)
      .where(and(eq(t.entity_type, kind), eq(t.entity_id, id)))
      .orderBy(asc(t.created_at))
      .all() as AdminEventRow[];
  }

  async getLeg(id: string): Promise<LegRow | null> {
    return legStore.getLeg(this.orm, id);
  }

  async listLegs(sessionId: string): Promise<LegRow[]> {
    return legStore.listLegs(this.orm, sessionId);
  }

  async runIdTaken(runId: string): Promise<boolean> {
    return legStore.runIdTaken(this.orm, runId);
  }

  async getBranch(id: string): Promise<BranchRow | null> {
    return legStore.getBranch(this.orm, id);
  }

  async listMessages(sessionId: string): Promise<MessageRow[]> {
    return legStore.listMessages(this.orm, sessionId);
  }

  async sessionLegState(sessionId: string): Promise<SessionLegState | null> {
    return legStore.sessionLegState(this.orm, sessionId);
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

  async legsUsingDirectory(dir: string) {
    return sweeps.legsUsingDirectory(this.db, dir);
  }

  async afterBulkBatch(): Promise<void> {
    sweeps.passiveCheckpoint(this.db);
  }

  close(): void {
    this.db.close();
  }
}

/** Write operations; every method runs inside SqliteBackend.transaction, under the write lock. */
class SqliteTx implements Tx {
  private readonly casSql = new Map<string, string>();
  private readonly insertAdminEventQuery;

  constructor(
    private readonly orm: BunSQLiteDatabase<typeof schema>,
    readonly notify: SqliteNotifyStore,
  ) {
    const ph = (name: string) => sql.placeholder(name);
    const a = schema.adminEvents;
    this.insertAdminEventQuery = orm
      .insert(a)
      .values({
        id: ph("id"),
        event_type: ph("event_type"),
        entity_type: ph("entity_type"),
        entity_id: ph("entity_id"),
        actor: ph("actor"),
        justification: ph("justification"),
        payload: ph("payload"),
        created_at: ph("created_at"),
      })
      .prepare();
  }

  // The guarded write's three statements use bun:sqlite directly: they run on every transition, and
  // drizzle's per-call parameter mapping measured ~15% of the whole write (bench/transitions.ts).
  private get client(): Database {
    return (this.orm as unknown as { $client: Database }).$client;
  }

  readStatus(kind: EntityKind, id: string): StatusRow | null {
    const sqlText = `SELECT status, updated_at${kind === "session" ? ", current_leg_id" : ""} FROM ${POLICIES[kind].table} WHERE id = ?`;
    return (this.client.query(sqlText).get(id) as StatusRow | null) ?? null;
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
    return this.client.query(sqlText).run(...(params as [])).changes;
  }

  insertTransition(row: Omit<TransitionRow, "seq">): number {
    const out = this.client
      .query(
        "INSERT INTO status_transitions (id, seq, entity_type, entity_id, previous_status, status, reason_code, reason_summary, evidence_refs, source, actor, created_at, metadata, terminal_event, leg_id) " +
          // Assigned under the write lock, so seq order is commit order.
          "VALUES (?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM status_transitions), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING seq",
      )
      .get(row.id, row.entity_type, row.entity_id, row.previous_status, row.status, row.reason_code, row.reason_summary, row.evidence_refs, row.source, row.actor, row.created_at, row.metadata, row.terminal_event, row.leg_id ?? null) as { seq: number };
    return out.seq;
  }

  insertAdminEvent(row: AdminEventRow): void {
    this.insertAdminEventQuery.run(row as unknown as Record<string, unknown>);
  }

  insertEntity(kind: EntityKind, row: Record<string, unknown>): void {
    this.orm.insert(tableOf(kind)).values(row as never).run();
  }

  getEntity(kind: EntityKind, id: string): EntityRow | null {
    const t = tableOf(kind);
    return (this.orm.select().from(t).where(eq(t.id, id)).get() as EntityRow | undefined) ?? null;
  }

  insertBranch(row: BranchRow): void {
    legStore.insertBranch(this.orm, row);
  }

  getBranch(id: string): BranchRow | null {
    return legStore.getBranch(this.orm, id);
  }

  relinkInvocation(sessionId: string, invocationId: string): void {
    legStore.relinkInvocation(this.orm, sessionId, invocationId);
  }

  rebindBranch(id: string, sessionId: string, now: number): number {
    return legStore.rebindBranch(this.orm, id, sessionId, now);
  }

  insertLeg(row: LegRow): void {
    legStore.insertLeg(this.orm, row);
  }

  updateLeg(id: string, patch: LegPatch, opts?: { onlyOpen?: boolean }): number {
    return legStore.updateLeg(this.orm, id, patch, opts);
  }

  getLeg(id: string): LegRow | null {
    return legStore.getLeg(this.orm, id);
  }

  nextLegSeq(sessionId: string): number {
    return legStore.nextLegSeq(this.orm, sessionId);
  }

  insertMessage(row: MessageRow): void {
    legStore.insertMessage(this.orm, row);
  }

  sessionLegState(sessionId: string): SessionLegState | null {
    return legStore.sessionLegState(this.orm, sessionId);
  }

  // Sweep re-checks and prune statements (SPEC §12), delegated to sweeps.ts.
  readSweepGuard(sessionId: string) {
    return sweeps.readSweepGuard(sweeps.clientOf(this.orm), sessionId);
  }

  pruneStatement(statement: Exclude<PruneStatement, "record_admin_event" | "read_legs">, sessionIds: readonly string[], options: { terminalStatuses: readonly string[]; cutoff: number }) {
    return sweeps.pruneStatement(sweeps.clientOf(this.orm), statement, sessionIds, options);
  }

  legsOfSessions(sessionIds: readonly string[]) {
    return sweeps.legsOfSessions(sweeps.clientOf(this.orm), sessionIds);
  }
}
