// Handler, consumer and delivery storage on SQLite (SPEC §9): set-based owed queries and guarded claims.

import type { Database, Statement } from "bun:sqlite";
import type { TransitionRow, CallbackRow, CallbackScope, ConsumerRow, DeadDelivery, DeliveryRow, EventContext, OwedDelivery } from "../rows.ts";
import type { ClaimSettlement, NotifyStore, OwedQuery } from "../notify-store.ts";
import { deliveryTakeable, type NextTakeableQuery, liveHandlerOnHostStatement, nextTakeableStatement, owedToConsumerStatement, owedToHandlersStatement } from "../rules/owed.ts";
import { eventContextOf } from "../rules/event-context.ts";
import type { ViewStatement } from "../rules/views.ts";
import { SQLITE_DIALECT, SQLITE_VIEWS } from "./dialect.ts";

type Params = Record<string, string | number | null>;

export class SqliteNotifyStore implements NotifyStore {
  private readonly cache = new Map<string, Statement>();

  /** `now`: the backend's clock (claims, settlements and what is due are judged by it, never by a caller's). */
  constructor(
    private readonly db: Database,
    private readonly now: () => number,
  ) {}

  private q(sql: string): Statement {
    let statement = this.cache.get(sql);
    if (!statement) {
      statement = this.db.query(sql);
      this.cache.set(sql, statement);
    }
    return statement;
  }

  private all<T>(sql: string, params: Params = {}): T[] {
    return this.q(sql).all(params as never) as T[];
  }

  private get<T>(sql: string, params: Params = {}): T | null {
    return (this.q(sql).get(params as never) as T | undefined) ?? null;
  }

  private run(sql: string, params: Params = {}): number {
    return this.q(sql).run(params as never).changes;
  }

  maxSeq(): number {
    return this.get<{ m: number | null }>("SELECT MAX(seq) AS m FROM status_transitions")?.m ?? 0;
  }

  insertCallback(row: CallbackRow): void {
    this.run(
      `INSERT INTO terminal_callbacks (id, scope, name, consumer, session_id, leg_id, argv, filter_kinds, filter_ids, origin, host_id, uid, enabled, created_at, retired_at)
       VALUES ($id, $scope, $name, $consumer, $session_id, $leg_id, $argv, $filter_kinds, $filter_ids, $origin, $host_id, $uid, $enabled, $created_at, $retired_at)`,
      { ...row },
    );
  }

  getCallbackByConsumer(consumer: string): CallbackRow | null {
    return this.get<CallbackRow>("SELECT * FROM terminal_callbacks WHERE consumer = $consumer", { consumer });
  }

  listCallbacks(opts: { scope?: CallbackScope; includeRetired?: boolean }): CallbackRow[] {
    return this.all<CallbackRow>(
      `SELECT * FROM terminal_callbacks WHERE ($scope IS NULL OR scope = $scope) AND ($all = 1 OR retired_at IS NULL) ORDER BY created_at, id`,
      { scope: opts.scope ?? null, all: opts.includeRetired ? 1 : 0 },
    );
  }

  retireCallback(id: string, now: number): number {
    return this.run("UPDATE terminal_callbacks SET retired_at = $now, enabled = 0 WHERE id = $id AND retired_at IS NULL", { id, now });
  }

  deleteRetiredCallback(consumer: string): number {
    return this.run("DELETE FROM terminal_callbacks WHERE consumer = $consumer AND retired_at IS NOT NULL", { consumer });
  }

  moveLegCallbacks(fromLegId: string, toLegId: string): number {
    return this.run("UPDATE terminal_callbacks SET leg_id = $to WHERE scope = 'leg' AND leg_id = $from AND retired_at IS NULL", { from: fromLegId, to: toLegId });
  }

  insertConsumer(row: ConsumerRow): boolean {
    return (
      this.run(
        "INSERT INTO consumers (name, watermark, registered_at, retired_at) VALUES ($name, $watermark, $registered_at, $retired_at) ON CONFLICT(name) DO NOTHING",
        { ...row },
      ) === 1
    );
  }

  getConsumer(name: string): ConsumerRow | null {
    return this.get<ConsumerRow>("SELECT * FROM consumers WHERE name = $name", { name });
  }

  reactivateConsumer(name: string, watermark: number, now: number): number {
    return this.run("UPDATE consumers SET watermark = $watermark, registered_at = $now, retired_at = NULL WHERE name = $name AND retired_at IS NOT NULL", {
      name,
      watermark,
      now,
    });
  }

  retireConsumer(name: string, now: number): number {
    return this.run("UPDATE consumers SET retired_at = $now WHERE name = $name AND retired_at IS NULL", { name, now });
  }

  releaseConsumer(name: string): number {
    return this.run("DELETE FROM terminal_deliveries WHERE consumer = $name AND state <> 'acked'", { name });
  }

  owedToHandlers(query: OwedQuery): OwedDelivery[] {
    if (query.hostId !== undefined) {
      // A host without a live registration is owed nothing: every leg's push asks, and most find none.
      const probe = liveHandlerOnHostStatement(SQLITE_DIALECT, query.hostId, query.uid);
      if (this.all(probe.sql, probe.values as Params).length === 0) return [];
    }
    // Holding nothing back is the same rule judged at the end of time: every unsettled row is open then.
    const now = query.includeHeld ? Number.MAX_SAFE_INTEGER : this.now();
    const statement = owedToHandlersStatement(SQLITE_DIALECT, query, now, query.limit);
    return this.all<OwedDelivery>(statement.sql, statement.values as Params);
  }

  nextTakeableAt(query: NextTakeableQuery): number | null {
    const statement = nextTakeableStatement(SQLITE_DIALECT, query);
    const t = this.all<{ t: number | null }>(statement.sql, statement.values as Params)[0]?.t;
    return t == null ? null : Number(t);
  }

  owedToConsumer(name: string, limit: number): TransitionRow[] {
    const statement = owedToConsumerStatement(SQLITE_DIALECT, name, limit);
    return this.all<TransitionRow>(statement.sql, statement.values as Params);
  }

  listDead(limit: number): DeadDelivery[] {
    return this.all<DeadDelivery>(
      `SELECT d.*, t.entity_type, t.entity_id, t.status FROM terminal_deliveries d
       JOIN status_transitions t ON t.id = d.transition_id
       WHERE d.state = 'dead' ORDER BY d.updated_at, d.consumer LIMIT $limit`,
      { limit },
    );
  }

  getTransition(id: string): TransitionRow | null {
    return this.get<TransitionRow>("SELECT * FROM status_transitions WHERE id = $id", { id });
  }

  async eventContext(transitionId: string): Promise<EventContext | null> {
    const transition = this.getTransition(transitionId);
    if (!transition) return null;
    return eventContextOf(SQLITE_VIEWS, transition, <T>(statement: ViewStatement) => (this.q(statement.sql).get(...(statement.params as never[])) as T | undefined) ?? null);
  }

  getDelivery(transitionId: string, consumer: string): DeliveryRow | null {
    return this.get<DeliveryRow>("SELECT * FROM terminal_deliveries WHERE transition_id = $tid AND consumer = $consumer", { tid: transitionId, consumer });
  }

  claim(transitionId: string, consumer: string, leaseSeconds: number): number | null {
    const now = this.now();
    const until = now + leaseSeconds;
    // The guard lives in the statement: only a fresh row, a due retry, or an expired claim is taken.
    const changed = this.run(
      `INSERT INTO terminal_deliveries (transition_id, consumer, state, attempts, claimed_until, created_at, updated_at)
       VALUES ($tid, $consumer, 'claimed', 1, $until, $now, $now)
       ON CONFLICT(transition_id, consumer) DO UPDATE SET state = 'claimed', attempts = attempts + 1, claimed_until = $until, updated_at = $now
       WHERE ${deliveryTakeable("terminal_deliveries", "$now")}`,
      { tid: transitionId, consumer, now, until },
    );
    return changed === 1 ? until : null;
  }

  settleClaim(transitionId: string, consumer: string, claimedUntil: number, settlement: ClaimSettlement): number {
    const now = this.now();
    return this.run(
      `UPDATE terminal_deliveries SET state = $state, last_error = COALESCE($err, last_error), next_attempt_at = $next, acked_at = $acked,
         claimed_until = NULL, updated_at = $now
       WHERE transition_id = $tid AND consumer = $consumer AND state = 'claimed' AND claimed_until = $until`,
      {
        tid: transitionId,
        consumer,
        until: claimedUntil,
        state: settlement.state,
        err: settlement.state === "acked" ? null : settlement.error,
        next: settlement.state === "retry" ? now + settlement.retryAfterSeconds : null,
        acked: settlement.state === "acked" ? now : null,
        now,
      },
    );
  }

  ackByHand(transitionId: string, consumer: string): number {
    return this.run(
      `INSERT INTO terminal_deliveries (transition_id, consumer, state, attempts, acked_at, created_at, updated_at)
       VALUES ($tid, $consumer, 'acked', 0, $now, $now, $now)
       ON CONFLICT(transition_id, consumer) DO UPDATE SET state = 'acked', acked_at = $now, claimed_until = NULL, updated_at = $now
       WHERE terminal_deliveries.state <> 'acked'`,
      { tid: transitionId, consumer, now: this.now() },
    );
  }

  buryExhausted(maxAttempts: number, error: string): number {
    return this.run(
      `UPDATE terminal_deliveries SET state = 'dead', last_error = $err, claimed_until = NULL, updated_at = $now
       WHERE state = 'claimed' AND claimed_until <= $now AND attempts >= $max`,
      { now: this.now(), max: maxAttempts, err: error },
    );
  }
}
