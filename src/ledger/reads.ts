// The read-only queries of waiting and the views (§11, §13), declared once; each backend implements them.
// Kept free of drizzle and zod so `li wait` can load it cheaply.

import type { ScheduleStore } from "./schedule-store.ts";
import type { MetricsStore } from "./rules/metrics.ts";
import type { EntityKind } from "../lifecycle/policy.ts";
import type { AdminEventRow, BranchRow, EntityRow, LegRow, TransitionRow, CallbackRow, DeliveryRow, RecentRow, WaitState } from "./rows.ts";
import type { ChangeWake, WakeOptions } from "./wake.ts";

/** Kinds an id is looked up in: the entity tables plus branch ids and run ids (legs.run_id), §11. */
export type LookupKind = EntityKind | "branch" | "run";

export interface RecentFilter {
  kinds: readonly EntityKind[];
  status?: string;
  /** Only rows updated at or after this Unix time. */
  since?: number;
  /** Only sessions whose current leg ran on this host (its name, its id, or its id's machine part before the boot); other kinds have no host. */
  host?: string;
  /** Only rows whose id, reason code, first branch id or current leg's command holds this text (ASCII letters in either case). */
  text?: string;
  /** Keyset paging: only rows after this one in the listing's order (updated_at, then id, both descending). */
  after?: RecentCursor;
  limit: number;
}

/** Where a page of the listing ended: its last row's updated_at and id. */
export interface RecentCursor {
  updatedAt: number;
  id: string;
}

export interface LedgerReads {
  /** Queues and scheduled runs (§19), for the views: a run's queue, place and what it waits for. */
  readonly schedule: ScheduleStore;
  /** The aggregate counts /metrics shows. */
  readonly metrics: MetricsStore;
  /** Whether `id` exists as `kind` (branch: branches.id; run: legs.run_id). */
  exists(kind: LookupKind, id: string): boolean | Promise<boolean>;
  /** Ids of `kind` starting with `prefix`, at most `limit`, by an index range scan. */
  idsWithPrefix(kind: LookupKind, prefix: string, limit: number): string[] | Promise<string[]>;
  /** The session a branch or run id belongs to. */
  owningSession(kind: "branch" | "run", id: string): string | null | Promise<string | null>;
  /** The wait projection of one target; null when the row is gone. */
  waitState(kind: EntityKind, id: string): WaitState | null | Promise<WaitState | null>;
  /** A number that changes whenever another connection commits (a cheap "anything new?" probe). */
  changeCounter(): number | Promise<number>;
  /** The longest prefix `id` shares with any other id a user could type (every LookupKind). */
  sharedPrefixLength(id: string): number | Promise<number>;
  /** sharedPrefixLength of each of `ids`, in one statement. */
  sharedPrefixLengths(ids: readonly string[]): Map<string, number> | Promise<Map<string, number>>;
  listRecent(filter: RecentFilter): RecentRow[] | Promise<RecentRow[]>;
  listCallbacks(sessionId: string): CallbackRow[] | Promise<CallbackRow[]>;
  /** Deliveries of the entity's transitions (terminal_deliveries joined through status_transitions). */
  listDeliveries(kind: EntityKind, id: string): DeliveryRow[] | Promise<DeliveryRow[]>;
  /** The whole row of one entity; null when it is not there. */
  entityRow(kind: EntityKind, id: string): EntityRow | null | Promise<EntityRow | null>;
  /** Its history, oldest first. */
  transitionsOf(kind: EntityKind, id: string): TransitionRow[] | Promise<TransitionRow[]>;
  adminEventsOf(kind: EntityKind, id: string): AdminEventRow[] | Promise<AdminEventRow[]>;
  /** A session's legs, first first. */
  legsOf(sessionId: string): LegRow[] | Promise<LegRow[]>;
  /** A session's branches, oldest first (by the branches_session_idx index). */
  branchesOf(sessionId: string): BranchRow[] | Promise<BranchRow[]>;
}

/** A ledger opened for reading only (open-reads.ts, and each backend's own opener): its reads, wake-ups and clock. */
export interface OpenedReads {
  reads: LedgerReads;
  /** Wakes on commits by other processes (SQLite: the file watch, loaded on first call, so a wait that ends at once never loads node:fs). */
  wake(options?: WakeOptions): Promise<ChangeWake>;
  /** The ledger's clock for the ages views show: on PostgreSQL the server's once the first read returned. */
  now(): number;
  /** Resolves once `now()` is the ledger's clock (PostgreSQL: connected, the server's clock measured): await it before a time taken ahead of any read. */
  ready(): Promise<void>;
  close(): void;
}
