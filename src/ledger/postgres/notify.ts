// Handler, consumer and delivery storage on PostgreSQL (SPEC §9), the twin of src/ledger/sqlite/notify.ts:
// set-based owed queries and claims that two watchers can race for. A claim locks its delivery row with
// FOR UPDATE SKIP LOCKED (a row another claimer holds is skipped, not waited for) and its lease is
// measured on the backend's clock, so watchers on hosts with skewed clocks agree when a claim expires.

import type { SQL } from "bun";
import type { ClaimSettlement, NotifyStore, OwedQuery } from "../notify-store.ts";
import type { CallbackRow, CallbackScope, ConsumerRow, DeadDelivery, DeliveryRow, EventContext, OwedDelivery, TransitionRow } from "../rows.ts";
import { deliveryTakeable, type NextTakeableQuery, nextTakeableStatement, owedToConsumerStatement, owedToHandlersStatement, type BuiltStatement } from "../rules/owed.ts";
import { eventContextOf } from "../rules/event-context.ts";
import type { ViewStatement } from "../rules/views.ts";
import { PG_DIALECT, PG_VIEWS } from "./dialect.ts";
import { consumerRow, owedRow, transitionRow } from "./row-numbers.ts";

type Row = Record<string, unknown>;

/** In claim's statements: a row free to take at $3 (now). */
const TAKEABLE = deliveryTakeable("terminal_deliveries", "$3");

const CALLBACK_COLUMNS = ["id", "scope", "name", "consumer", "session_id", "leg_id", "argv", "filter_kinds", "filter_ids", "origin", "host_id", "uid", "enabled", "created_at", "retired_at"] as const;

/** Runs `fn` on a connection: the pool outside a transaction (failures named as the ledger's), or a transaction's handle. */
export type PgRun = <T>(fn: (sql: SQL) => Promise<T>) => Promise<T>;

/**
 * The store over one runner: the pool's for reads outside a transaction (`backend.notify`), or one
 * transaction's handle (`tx.notify`, one store per transaction). `now` is the backend's clock.
 */
export class PgNotifyStore implements NotifyStore {
  constructor(
    private readonly run: PgRun,
    private readonly now: () => number,
  ) {}

  /** A store on one handle (a transaction's, or a test's connection). */
  static on(sql: SQL, now: () => number): PgNotifyStore {
    return new PgNotifyStore((fn) => fn(sql), now);
  }

  private rows<T = Row>(text: string, params: unknown[] = []): Promise<T[]> {
    return this.run(async (sql) => [...(await sql.unsafe(text, params))] as T[]);
  }

  private async one<T = Row>(text: string, params: unknown[] = []): Promise<T | null> {
    return (await this.rows<T>(text, params))[0] ?? null;
  }

  private built(statement: BuiltStatement): Promise<Row[]> {
    return this.rows(statement.sql, statement.order.map((name) => statement.values[name]));
  }

  /** A write; returns the rows it changed. */
  private change(text: string, params: unknown[] = []): Promise<number> {
    return this.run(async (sql) => (await sql.unsafe(text, params)).count as number);
  }

  async maxSeq(): Promise<number> {
    return Number((await this.one<{ m: string | null }>("SELECT MAX(seq) AS m FROM status_transitions"))?.m ?? 0);
  }

  async insertCallback(row: CallbackRow): Promise<void> {
    await this.change(
      `INSERT INTO terminal_callbacks (${CALLBACK_COLUMNS.join(", ")}) VALUES (${CALLBACK_COLUMNS.map((_, i) => `$${i + 1}`).join(", ")})`,
      CALLBACK_COLUMNS.map((c) => row[c] ?? null),
    );
  }

  async getCallbackByConsumer(consumer: string): Promise<CallbackRow | null> {
    return this.one<CallbackRow>("SELECT * FROM terminal_callbacks WHERE consumer = $1", [consumer]);
  }

  async listCallbacks(opts: { scope?: CallbackScope; includeRetired?: boolean }): Promise<CallbackRow[]> {
    return this.rows<CallbackRow>(`SELECT * FROM terminal_callbacks WHERE ($1::text IS NULL OR scope = $1) AND ($2 OR retired_at IS NULL) ORDER BY created_at, id`, [
      opts.scope ?? null,
      opts.includeRetired === true,
    ]);
  }

  async retireCallback(id: string, now: number): Promise<number> {
    return this.change("UPDATE terminal_callbacks SET retired_at = $2, enabled = 0 WHERE id = $1 AND retired_at IS NULL", [id, now]);
  }

  async deleteRetiredCallback(consumer: string): Promise<number> {
    return this.change("DELETE FROM terminal_callbacks WHERE consumer = $1 AND retired_at IS NOT NULL", [consumer]);
  }

  async moveLegCallbacks(fromLegId: string, toLegId: string): Promise<number> {
    return this.change("UPDATE terminal_callbacks SET leg_id = $2 WHERE scope = 'leg' AND leg_id = $1 AND retired_at IS NULL", [fromLegId, toLegId]);
  }

  async insertConsumer(row: ConsumerRow): Promise<boolean> {
    const inserted = await this.change("INSERT INTO consumers (name, watermark, registered_at, retired_at) VALUES ($1, $2, $3, $4) ON CONFLICT (name) DO NOTHING", [
      row.name,
      row.watermark,
      row.registered_at,
      row.retired_at,
    ]);
    return inserted === 1;
  }

  async getConsumer(name: string): Promise<ConsumerRow | null> {
    const row = await this.one("SELECT * FROM consumers WHERE name = $1", [name]);
    return row ? consumerRow(row) : null;
  }

  async reactivateConsumer(name: string, watermark: number, now: number): Promise<number> {
    return this.change("UPDATE consumers SET watermark = $2, registered_at = $3, retired_at = NULL WHERE name = $1 AND retired_at IS NOT NULL", [name, watermark, now]);
  }

  async retireConsumer(name: string, now: number): Promise<number> {
    return this.change("UPDATE consumers SET retired_at = $2 WHERE name = $1 AND retired_at IS NULL", [name, now]);
  }

  async releaseConsumer(name: string): Promise<number> {
    return this.change("DELETE FROM terminal_deliveries WHERE consumer = $1 AND state <> 'acked'", [name]);
  }

  async owedToHandlers(query: OwedQuery): Promise<OwedDelivery[]> {
    // Holding nothing back is the same rule judged at the end of time: every unsettled row is open then.
    const now = query.includeHeld ? Number.MAX_SAFE_INTEGER : this.now();
    return (await this.built(owedToHandlersStatement(PG_DIALECT, query, now, query.limit))).map(owedRow);
  }

  async nextTakeableAt(query: NextTakeableQuery): Promise<number | null> {
    const t = (await this.built(nextTakeableStatement(PG_DIALECT, query)))[0]?.t;
    return t == null ? null : Number(t);
  }

  async owedToConsumer(name: string, limit: number): Promise<TransitionRow[]> {
    return (await this.built(owedToConsumerStatement(PG_DIALECT, name, limit))).map(transitionRow);
  }

  async listDead(limit: number): Promise<DeadDelivery[]> {
    return this.rows<DeadDelivery>(
      `SELECT d.*, t.entity_type, t.entity_id, t.status FROM terminal_deliveries d
       JOIN status_transitions t ON t.id = d.transition_id
       WHERE d.state = 'dead' ORDER BY d.updated_at, d.consumer LIMIT $1`,
      [limit],
    );
  }

  async getTransition(id: string): Promise<TransitionRow | null> {
    const row = await this.one("SELECT * FROM status_transitions WHERE id = $1", [id]);
    return row ? transitionRow(row) : null;
  }

  async eventContext(transitionId: string): Promise<EventContext | null> {
    const transition = await this.getTransition(transitionId);
    if (!transition) return null;
    return eventContextOf(PG_VIEWS, transition, <T>(statement: ViewStatement) => this.one<T>(statement.sql, statement.params));
  }

  async getDelivery(transitionId: string, consumer: string): Promise<DeliveryRow | null> {
    return this.one<DeliveryRow>("SELECT * FROM terminal_deliveries WHERE transition_id = $1 AND consumer = $2", [transitionId, consumer]);
  }

  async claim(transitionId: string, consumer: string, leaseSeconds: number): Promise<number | null> {
    const now = this.now();
    const until = now + leaseSeconds;
    // A fresh row. Only when none is committed: an insert that meets an existing row waits for whoever holds
    // it locked, where a claim must skip it. Against a concurrent fresh insert it waits for that commit.
    const [fresh] = await this.rows<{ claimed_until: number }>(
      `INSERT INTO terminal_deliveries (transition_id, consumer, state, attempts, claimed_until, created_at, updated_at)
       SELECT $1, $2, 'claimed', 1, $4, $3, $3
       WHERE NOT EXISTS (SELECT 1 FROM terminal_deliveries WHERE transition_id = $1 AND consumer = $2)
       ON CONFLICT (transition_id, consumer) DO NOTHING RETURNING claimed_until`,
      [transitionId, consumer, now, until],
    );
    if (fresh) return fresh.claimed_until;
    // An existing row: taken only when free, under its row lock; a row another claimer holds is skipped.
    const [taken] = await this.rows<{ claimed_until: number }>(
      `UPDATE terminal_deliveries SET state = 'claimed', attempts = attempts + 1, claimed_until = $4, updated_at = $3
       WHERE (transition_id, consumer) = (SELECT transition_id, consumer FROM terminal_deliveries
         WHERE transition_id = $1 AND consumer = $2 AND ${TAKEABLE} FOR UPDATE SKIP LOCKED)
       RETURNING claimed_until`,
      [transitionId, consumer, now, until],
    );
    // The value as stored: the token settleClaim compares with.
    return taken?.claimed_until ?? null;
  }

  async settleClaim(transitionId: string, consumer: string, claimedUntil: number, settlement: ClaimSettlement): Promise<number> {
    const now = this.now();
    // Guarded on the claim we set: a claim that expired and was taken over carries another claimed_until.
    return this.change(
      `UPDATE terminal_deliveries SET state = $4, last_error = COALESCE($5, last_error), next_attempt_at = $6, acked_at = $7, claimed_until = NULL, updated_at = $8
       WHERE transition_id = $1 AND consumer = $2 AND state = 'claimed' AND claimed_until = $3`,
      [
        transitionId,
        consumer,
        claimedUntil,
        settlement.state,
        settlement.state === "acked" ? null : settlement.error,
        settlement.state === "retry" ? now + settlement.retryAfterSeconds : null,
        settlement.state === "acked" ? now : null,
        now,
      ],
    );
  }

  async ackByHand(transitionId: string, consumer: string): Promise<number> {
    // Parallel acks: the second waits on the first's row, then finds it acked and changes nothing.
    return this.change(
      `INSERT INTO terminal_deliveries (transition_id, consumer, state, attempts, acked_at, created_at, updated_at)
       VALUES ($1, $2, 'acked', 0, $3, $3, $3)
       ON CONFLICT (transition_id, consumer) DO UPDATE SET state = 'acked', acked_at = $3, claimed_until = NULL, updated_at = $3
       WHERE terminal_deliveries.state <> 'acked'`,
      [transitionId, consumer, this.now()],
    );
  }

  async buryExhausted(maxAttempts: number, error: string): Promise<number> {
    // A row someone holds locked is being taken over or settled right now: not ours to bury.
    return this.change(
      `UPDATE terminal_deliveries SET state = 'dead', last_error = $3, claimed_until = NULL, updated_at = $1
       WHERE (transition_id, consumer) IN (SELECT transition_id, consumer FROM terminal_deliveries
         WHERE state = 'claimed' AND claimed_until <= $1 AND attempts >= $2 FOR UPDATE SKIP LOCKED)`,
      [this.now(), maxAttempts, error],
    );
  }
}
