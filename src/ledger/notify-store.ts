// The storage contract for handlers, consumers and deliveries (SPEC §9): rows in, rows out, no policy.

import type { CallbackRow, CallbackScope, ConsumerRow, DeadDelivery, DeliveryRow, EventContext, OwedDelivery, TransitionRow } from "./rows.ts";
import type { Awaitable } from "../util/awaitable.ts";
import type { NextTakeableQuery } from "./rules/owed.ts";

/** How a claimed delivery ends: acknowledged, retried after a delay, or given up. */
export type ClaimSettlement = { state: "acked" } | { state: "retry"; error: string; retryAfterSeconds: number } | { state: "dead"; error: string };

export interface OwedQuery {
  /** Only handlers registered on this host. */
  hostId?: string;
  /** Only handlers this uid registered (§18: a process runs only its own uid's handlers). */
  uid?: number;
  /** Only this event (the push path). */
  transitionId?: string;
  /** Only this handler's consumer. */
  consumer?: string;
  /**
   * Also rows someone holds a live claim on or whose retry is not due yet: everything still unsettled,
   * not only what is free to take at the backend's `now()` (the default).
   */
  includeHeld?: boolean;
  limit: number;
}

/** Handler, consumer and delivery storage. Writes only inside `Backend.transaction` (via `tx.notify`). */
export interface NotifyStore {
  /** The highest committed `status_transitions.seq` (0 on an empty ledger). */
  maxSeq(): Awaitable<number>;
  insertCallback(row: CallbackRow): Awaitable<void>;
  getCallbackByConsumer(consumer: string): Awaitable<CallbackRow | null>;
  listCallbacks(opts: { scope?: CallbackScope; includeRetired?: boolean }): Awaitable<CallbackRow[]>;
  retireCallback(id: string, now: number): Awaitable<number>;
  /** Removes a retired registration so its name can be registered again. */
  deleteRetiredCallback(consumer: string): Awaitable<number>;
  /** Re-binds the live leg registrations of one leg to another (a deferred leg passes them on). */
  moveLegCallbacks(fromLegId: string, toLegId: string): Awaitable<number>;

  /** Inserts unless the name exists; returns whether it inserted. */
  insertConsumer(row: ConsumerRow): Awaitable<boolean>;
  getConsumer(name: string): Awaitable<ConsumerRow | null>;
  /** Gives a retired consumer a new life from `watermark`. */
  reactivateConsumer(name: string, watermark: number, now: number): Awaitable<number>;
  retireConsumer(name: string, now: number): Awaitable<number>;
  /** Deletes what a consumer still owed (rows not acked); returns how many. */
  releaseConsumer(name: string): Awaitable<number>;

  owedToHandlers(query: OwedQuery): Awaitable<OwedDelivery[]>;
  /**
   * When the next delivery held back from `owedToHandlers` becomes free to take (a retry falls due, a claim
   * expires) for host `hostId`'s handlers of `uid`, with `anyClaim` also any claim expiring on any host, after
   * `after`; null: none.
   */
  nextTakeableAt(query: NextTakeableQuery): Awaitable<number | null>;
  /** Unacknowledged terminal events above the consumer's watermark, oldest seq first (a plain consumer). */
  owedToConsumer(name: string, limit: number): Awaitable<TransitionRow[]>;
  listDead(limit: number): Awaitable<DeadDelivery[]>;
  getTransition(id: string): Awaitable<TransitionRow | null>;
  eventContext(transitionId: string): Awaitable<EventContext | null>;
  getDelivery(transitionId: string, consumer: string): Awaitable<DeliveryRow | null>;

  /**
   * Takes a claim for `leaseSeconds` from the backend's `now()`: inserts a fresh row, or updates one that is
   * due for retry or whose claim expired. Counts one attempt. Returns the `claimed_until` it set (the token
   * `settleClaim` guards on), or null when someone else holds it or it is settled.
   */
  claim(transitionId: string, consumer: string, leaseSeconds: number): Awaitable<number | null>;
  /**
   * Settles our claim at the backend's `now()`: guarded on state = 'claimed' and the `claimed_until` we set,
   * so an expired claim taken over is left alone. Returns rows changed (0: the claim was lost).
   */
  settleClaim(transitionId: string, consumer: string, claimedUntil: number, settlement: ClaimSettlement): Awaitable<number>;
  /** A by-hand acknowledgement at the backend's `now()`: inserts or updates to acked; parallel acks leave one row. Returns rows changed. */
  ackByHand(transitionId: string, consumer: string): Awaitable<number>;
  /** Claims expired by the backend's `now()` that already used every attempt become dead. */
  buryExhausted(maxAttempts: number, error: string): Awaitable<number>;
}
