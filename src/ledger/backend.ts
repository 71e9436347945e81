// The storage contract every backend implements (SQLite now, PostgreSQL beside it, §14).
// Domain logic (the guarded transition, creation, views) is written once against these types;
// only the adapters under src/ledger/<backend>/ hold dialect SQL.

import type { EntityKind } from "../lifecycle/policy.ts";
import type { SweepReads, SweepWrites } from "./sweep-store.ts";
import type { LedgerReads } from "./reads.ts";
import type { NotifyStore } from "./notify-store.ts";
import type { ScheduleStore } from "./schedule-store.ts";
import type { CronStore } from "./cron-store.ts";
import type { LedgerUnavailableError } from "../util/errors.ts";
import type { AdminEventRow, BranchRow, EntityRow, LegPatch, LegRow, MessageRow, SessionLegState, SpoolReplayRow, StatusRow, StatusSet, TransitionRow } from "./rows.ts";
import type { Awaitable } from "../util/awaitable.ts";
import type { ChangeWake, ListenState, WakeOptions } from "./wake.ts";
import type { WatcherLock } from "./watcher-lock.ts";

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
  /** Inserts the branch unless one with its id exists (then nothing is written): whether it was inserted. One statement. */
  insertBranchIfAbsent(row: BranchRow): Awaitable<boolean>;
  getBranch(id: string): Awaitable<BranchRow | null>;
  /** Points an existing branch at another session (a resume whose session was removed starts a new one, §10). */
  rebindBranch(id: string, sessionId: string, now: number): Awaitable<number>;
  /** Points a session at an invocation (`--invocation` on a resume, §10); not a status write. */
  relinkInvocation(sessionId: string, invocationId: string): Awaitable<void>;
  insertLeg(row: LegRow): Awaitable<void>;
  /** Sets leg bookkeeping columns; with `onlyOpen`, only while the leg has no `ended_at`. Returns rows changed. */
  updateLeg(id: string, patch: LegPatch, opts?: { onlyOpen?: boolean }): Awaitable<number>;
  /**
   * Sets an open leg's heartbeat_at to `at` unless it already holds a later one (an older beat that
   * commits last must not move it backwards, §8.5); returns rows changed (0 for a closed leg or an older beat).
   */
  refreshHeartbeat(legId: string, at: number): Awaitable<number>;
  getLeg(id: string): Awaitable<LegRow | null>;
  /** The next `legs.seq` for a session (1 for its first leg). */
  nextLegSeq(sessionId: string): Awaitable<number>;
  insertMessage(row: MessageRow): Awaitable<void>;
  sessionLegState(sessionId: string): Awaitable<SessionLegState | null>;
  /** Whether this spool entry was already replayed into the ledger (§17). */
  spoolReplayed(id: string): Awaitable<boolean>;
  /** Records a spool entry as replayed, in the replay's own transaction. */
  recordSpoolReplay(row: SpoolReplayRow): Awaitable<void>;
  /** Handlers, consumers and deliveries (§9), under this transaction. */
  readonly notify: NotifyStore;
  /** Queues, scheduled runs' bookkeeping and dependencies (§19), under this transaction (with row locks where the backend has them). */
  readonly schedule: ScheduleStore;
  /** Cron schedules and their fire records (§19), under this transaction. */
  readonly cron: CronStore;
}

export interface TransactionOptions {
  /**
   * The longest to wait for another process's lock before failing as unreachable (§17), in ms: one
   * wait, no retries, never more than the connection's own busy timeout (Infinity: that timeout). For a
   * write that is retried anyway (a leg's heartbeat): on SQLite the wait blocks the leg's thread, and
   * the default busy timeout (with its retries) would hold the command's output for tens of seconds.
   * Backends whose waits do not block (PostgreSQL) may ignore it.
   */
  lockWaitMs?: number;
  /**
   * The longest the whole transaction may take, connecting included, in ms: what is left of the
   * caller's own deadline (a leg's --ledger-retry, §17). Past it the call fails as unreachable. On
   * PostgreSQL; SQLite's waits are bounded by lockWaitMs.
   */
  withinMs?: number;
}

/** A ledger backend: a write-transaction runner plus reads. */
/** How a backend's connections can be given back, and watched for on behalf of others (§20). */
export interface ConnectionBudget {
  /** Names this ledger (server, database and schema) for the watcher's local channel on this host. */
  readonly key: string;
  /** Closes every connection now without closing the ledger: the next call connects again. */
  release(): void;
  /**
   * Calls `onNotice(legId)` on every kill request recorded on any leg, and `onNotice(null)` on every
   * (re)subscription (notices sent while disconnected are lost: re-read all). Returns the unsubscribe.
   */
  onAnyKillRequest(onNotice: (legId: string | null) => void): () => void;
}

export interface Backend extends SweepReads {
  /** Printable location (a path, or a URL without its password). */
  readonly location: string;
  /**
   * The ledger's clock, Unix seconds: every time li writes or compares (heartbeats, updated_at, claims'
   * leases, sweeps' ages) comes from here, and SQL never reads a clock of its own. SQLite: the injected
   * clock or the host's; PostgreSQL: the server's (the host's plus a measured offset), so hosts agree.
   */
  now(): number;
  /** The read-only queries of waiting and the views (§11, §13). */
  readonly reads: LedgerReads;
  /** Handler, consumer and delivery reads outside a transaction (§9); write through `tx.notify`. */
  readonly notify: NotifyStore;
  /** Queue and scheduled-run reads outside a transaction (§19); write through `tx.schedule`. */
  readonly schedule: ScheduleStore;
  /** Cron schedules and fire records outside a transaction (§19); write through `tx.cron`. */
  readonly cron: CronStore;
  /**
   * Runs `fn` in one write transaction and commits; any throw rolls back.
   * `fn` must only touch storage through `tx` (on SQLite it runs under the database write lock).
   */
  transaction<T>(fn: (tx: Tx) => Awaitable<T>, options?: TransactionOptions): Promise<T>;
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
   * Resolves once `now()` is the ledger's clock (PostgreSQL: the pool connected and measured the server's
   * clock; until then `now()` is this host's). Absent where `now()` needs nothing (SQLite). A time taken
   * before the first query (a leg's start, a sweep's `now`) must wait for it; rejects as the first
   * query would (an unreachable server, a missing ledger).
   */
  ready?(): Promise<void>;
  /**
   * Cuts every call started from now on to end by `atMs` (monotonic, performance.now()), connecting
   * included: a caller's own deadline (a leg's --ledger-retry at its end, §17) holds on a link that went
   * silent, whatever the call. null lifts it. Absent where calls cannot hang (SQLite: the busy timeout).
   */
  cutCallsAt?(atMs: number | null): void;
  /**
   * Calls `onRequest` when a kill request may have been recorded on leg `legId` (li kill from another
   * host, §12.2), and on every (re)subscription, since notices sent while disconnected are lost; the
   * caller re-reads the leg's `kill_requested_at` (a call is a reason to look, not proof). Returns the
   * unsubscribe function. Absent where the backend cannot reach another host's supervisor (SQLite): the
   * leg's heartbeat still notices a request, and `li kill` refuses a leg of another host there.
   */
  onKillRequest?(legId: string, onRequest: () => void): () => void;
  /**
   * Present where every open connection counts against a server's budget (PostgreSQL, §20): a leg whose
   * host runs a watcher hands its heartbeats and kill requests to that watcher and holds no connection
   * while its command runs. Absent (SQLite): nothing to save.
   */
  readonly connections?: ConnectionBudget;
  /**
   * This backend's failure behind `error` (disk full, read-only, not a li ledger…) as the exit-78 error
   * naming the ledger, or null when `error` is not about the ledger. The adapter owns the classification.
   */
  ledgerError(error: unknown): LedgerUnavailableError | null;
  /**
   * Unix seconds (the ledger's clock) since when the ledger itself has been serving, when the backend
   * knows (PostgreSQL: `pg_postmaster_start_time()`); heartbeats from before it may not have been
   * writable, so a sweep counts no age from earlier (§17). Absent or null: not known (SQLite).
   */
  availableSince?(): Promise<number | null>;
  /**
   * Wakes on commits by any process (SQLite: a watch on the database files; PostgreSQL: LISTEN). Arm it
   * before the first check of the state; waiters keep their safety poll whatever it reports.
   */
  wake(options?: WakeOptions): Promise<ChangeWake>;
  /**
   * li watch's wake-up for host `hostId` where commits can be told apart by whom they concern (PostgreSQL:
   * its host's and the fleet's channels, §14 "Many hosts"). Absent: `wake()`, every commit (SQLite's one host).
   */
  watcherWake?(hostId: string, onListen?: (state: ListenState) => void): Promise<ChangeWake>;
  /** Takes the watcher lock of `hostId` (one `li watch` per ledger per host) or throws LockHeldError at once. */
  lockWatcher(hostId: string): Promise<WatcherLock>;
  close(): void;
}
