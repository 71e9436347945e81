// The storage contract every backend implements (SQLite now, PostgreSQL beside it, §14).
// Domain logic (the guarded transition, creation, views) is written once against these types;
// only the adapters under src/ledger/<backend>/ hold dialect SQL.

import type { EntityKind } from "../lifecycle/policy.ts";
import type { SweepReads, SweepWrites } from "./sweep-store.ts";
import type { LedgerReads } from "./reads.ts";
import type { NotifyStore } from "./notify-store.ts";
import type { LedgerUnavailableError } from "../util/errors.ts";

export type Awaitable<T> = T | Promise<T>;

/** Who made a write (§5); the schema checks this list. */
export const SOURCES = ["executor", "agent", "admin", "system"] as const;
export type Source = (typeof SOURCES)[number];

/** The part of an entity row the guarded transition decides on. */
export interface StatusRow {
  status: string | null;
  updated_at: number;
  /** Sessions only: the leg the session row describes (§2). */
  current_leg_id?: string | null;
}

export interface TransitionRow {
  id: string;
  seq: number;
  entity_type: EntityKind;
  entity_id: string;
  previous_status: string | null;
  status: string;
  reason_code: string;
  reason_summary: string | null;
  evidence_refs: string | null;
  source: Source;
  actor: string | null;
  created_at: number;
  metadata: string | null;
  terminal_event: number;
  /** Sessions only: the session's current leg once this transition applied (whose notice it is, §9.1). */
  leg_id: string | null;
}

export interface AdminEventRow {
  id: string;
  event_type: string;
  entity_type: string | null;
  entity_id: string | null;
  actor: string | null;
  justification: string | null;
  payload: string | null;
  created_at: number;
}

/** Columns a guarded write sets besides the extra fields. */
export interface StatusSet {
  status: string;
  status_reason_code: string;
  status_reason_summary: string | null;
  status_evidence_refs: string | null;
  updated_at: number;
}

export type EntityRow = Record<string, unknown> & { id: string; status: string; updated_at: number };

/** One leg of a session (§3, §8): bookkeeping written at the leg's start and by its session's guarded write. */
export interface LegRow {
  id: string;
  session_id: string;
  seq: number;
  run_id: string;
  state_root: string;
  artifact_root: string;
  /** JSON argv. */
  command: string;
  cwd: string | null;
  pid: number | null;
  pid_start_ticks: number | null;
  boot_id: string | null;
  host_id: string | null;
  /** The supervisor's host name (absent on legs recorded before li kept it). */
  host_name?: string | null;
  command_pid: number | null;
  command_start_ticks: number | null;
  started_at: number;
  heartbeat_at: number | null;
  kill_requested_at: number | null;
  ended_at: number | null;
  status: string;
  reason_code: string | null;
  exit_code: number | null;
  deferred: number;
  first_msg_id: string | null;
  last_msg_id: string | null;
}

export interface BranchRow {
  id: string;
  session_id: string;
  name: string | null;
  metadata: string | null;
  created_at: number;
  updated_at: number;
}

export interface MessageRow {
  id: string;
  session_id: string;
  branch_id: string | null;
  leg_id: string | null;
  role: string;
  content: string;
  truncated: number;
  created_at: number;
}

/** What a leg's teardown needs of its session: the status it guards on and whether it is still current. */
export interface SessionLegState {
  status: string;
  status_reason_code: string | null;
  current_leg_id: string | null;
  node_metadata: string | null;
  first_msg_id: string | null;
}

/** Leg columns that may change after insert (never `status` of the session: that is the guarded write's). */
export type LegPatch = Partial<Omit<LegRow, "id" | "session_id" | "seq" | "run_id">>;

/** Operations inside one write transaction. On SQLite the write lock is already held. */
export interface Tx extends SweepWrites {
  /** The row's status and version; takes the row lock where the backend has row locks. */
  readStatus(kind: EntityKind, id: string): Awaitable<StatusRow | null>;
  /** UPDATE … WHERE id = ? AND status IS <read status> [AND updated_at = ?]; returns rows changed. */
  casStatus(kind: EntityKind, id: string, guard: { status: string | null; updatedAt?: number }, set: StatusSet, extra: Record<string, unknown>): Awaitable<number>;
  /** Inserts a history row and returns its commit-ordered seq. */
  insertTransition(row: Omit<TransitionRow, "seq">): Awaitable<number>;
  insertAdminEvent(row: AdminEventRow): Awaitable<void>;
  insertEntity(kind: EntityKind, row: Record<string, unknown>): Awaitable<void>;
  getEntity(kind: EntityKind, id: string): Awaitable<EntityRow | null>;
  insertBranch(row: BranchRow): Awaitable<void>;
  getBranch(id: string): Awaitable<BranchRow | null>;
  /** Points an existing branch at another session (a resume whose session was removed starts a new one, §10). */
  rebindBranch(id: string, sessionId: string, now: number): Awaitable<number>;
  /** Points a session at an invocation (`--invocation` on a resume, §10); not a status write. */
  relinkInvocation(sessionId: string, invocationId: string): Awaitable<void>;
  insertLeg(row: LegRow): Awaitable<void>;
  /** Sets leg bookkeeping columns; with `onlyOpen`, only while the leg has no `ended_at`. Returns rows changed. */
  updateLeg(id: string, patch: LegPatch, opts?: { onlyOpen?: boolean }): Awaitable<number>;
  getLeg(id: string): Awaitable<LegRow | null>;
  /** The next `legs.seq` for a session (1 for its first leg). */
  nextLegSeq(sessionId: string): Awaitable<number>;
  insertMessage(row: MessageRow): Awaitable<void>;
  sessionLegState(sessionId: string): Awaitable<SessionLegState | null>;
  /** Handlers, consumers and deliveries (§9), under this transaction. */
  readonly notify: NotifyStore;
}

/** A ledger backend: a write-transaction runner plus reads. */
export interface Backend extends SweepReads {
  /** Printable location (a path, or a URL without its password). */
  readonly location: string;
  /** The read-only queries of waiting and the views (§11, §13). */
  readonly reads: LedgerReads;
  /** Handler, consumer and delivery reads outside a transaction (§9); write through `tx.notify`. */
  readonly notify: NotifyStore;
  /**
   * Runs `fn` in one write transaction and commits; any throw rolls back.
   * `fn` must only touch storage through `tx` (on SQLite it runs under the database write lock).
   */
  transaction<T>(fn: (tx: Tx) => Awaitable<T>): Promise<T>;
  getEntity(kind: EntityKind, id: string): Promise<EntityRow | null>;
  /** Ids of `kind` starting with `prefix` (at most `limit`), by index range, not a scan. */
  findIdsByPrefix(kind: EntityKind, prefix: string, limit: number): Promise<string[]>;
  listTransitions(kind: EntityKind, id: string): Promise<TransitionRow[]>;
  listAdminEvents(kind: EntityKind, id: string): Promise<AdminEventRow[]>;
  getLeg(id: string): Promise<LegRow | null>;
  /** A session's legs in seq order. */
  listLegs(sessionId: string): Promise<LegRow[]>;
  /** Whether any leg already uses this run id (run ids are unique among legs, §6). */
  runIdTaken(runId: string): Promise<boolean>;
  getBranch(id: string): Promise<BranchRow | null>;
  /** A session's messages, oldest first. */
  listMessages(sessionId: string): Promise<MessageRow[]>;
  sessionLegState(sessionId: string): Promise<SessionLegState | null>;
  /**
   * This backend's failure behind `error` (disk full, read-only, not a li ledger…) as the exit-78 error
   * naming the ledger, or null when `error` is not about the ledger. The adapter owns the classification.
   */
  ledgerError(error: unknown): LedgerUnavailableError | null;
  close(): void;
}
