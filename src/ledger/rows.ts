// Every row and record type the backend contract speaks in, declared once (a leaf: no other ledger module is
// imported here, so backend.ts, reads.ts, notify-store.ts and sweep-store.ts can all depend on it without cycles).

import type { EntityKind } from "../lifecycle/policy.ts";

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
  /** How the leg's processes were found (cgroup, environ, group) and its cgroup's directory; absent on legs recorded before li kept them. */
  containment?: string | null;
  cgroup_path?: string | null;
  /** The command tree's CPU seconds and peak resident memory, as the kernel counted them (SPEC §8.7). */
  cpu_user_seconds?: number | null;
  cpu_system_seconds?: number | null;
  peak_rss_bytes?: number | null;
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
/** What updateLeg may set: heartbeat_at only goes forward, through Tx.refreshHeartbeat. */
/**
 * `legs.artifact_root` of a leg that has none: its root was inside a run directory that could not be
 * written and was removed (§16). The column is NOT NULL; every view reads this as no directory (`-`).
 */
export const NO_ARTIFACT_ROOT = "";

export type LegPatch = Partial<Omit<LegRow, "id" | "session_id" | "seq" | "run_id" | "heartbeat_at">>;

/** A handler bound to one leg's session, or a named one over many entities (§9); the schema checks this list. */
export const CALLBACK_SCOPES = ["leg", "standing"] as const;
export type CallbackScope = (typeof CALLBACK_SCOPES)[number];

/** Where one (event, consumer) delivery stands; the schema checks this list. */
export const DELIVERY_STATES = ["claimed", "retry", "acked", "dead"] as const;
export type DeliveryState = (typeof DELIVERY_STATES)[number];

export interface CallbackRow {
  id: string;
  scope: CallbackScope;
  name: string | null;
  consumer: string;
  session_id: string | null;
  leg_id: string | null;
  /** JSON list of argv words (placeholders not yet substituted). */
  argv: string;
  /** JSON list of execution kinds, or null for every kind. */
  filter_kinds: string | null;
  /** JSON list of entity ids, or null for every id. */
  filter_ids: string | null;
  origin: string;
  host_id: string;
  /** The uid that registered it: only processes of that uid run it (§18). Null: registered before li recorded owners, run by none. */
  uid: number | null;
  enabled: number;
  created_at: number;
  retired_at: number | null;
}

export interface ConsumerRow {
  name: string;
  watermark: number;
  registered_at: number;
  retired_at: number | null;
}

export interface DeliveryRow {
  transition_id: string;
  consumer: string;
  state: DeliveryState;
  attempts: number;
  last_error: string | null;
  claimed_until: number | null;
  next_attempt_at: number | null;
  acked_at: number | null;
  created_at: number;
  updated_at: number;
}

/** One (handler, event) pair a handler is owed, with the delivery row's state when there is one. */
export interface OwedDelivery {
  transition_id: string;
  seq: number;
  entity_type: string;
  entity_id: string;
  consumer: string;
  callback_id: string;
  scope: CallbackScope;
  argv: string;
  leg_id: string | null;
  state: DeliveryState | null;
  claimed_until: number | null;
  attempts: number | null;
}

/** What a handler's envelope and placeholders are built from. */
export interface EventContext {
  transition: TransitionRow;
  /** The entity row; null when it no longer exists. */
  entity: EntityRow | null;
  branchId: string | null;
  /** The leg whose end the event was (sessions: the transition's leg, else the current one), when known. */
  leg: {
    id: string;
    run_id: string;
    state_root: string;
    artifact_root: string;
    exit_code: number | null;
    cpu_user_seconds?: number | null;
    cpu_system_seconds?: number | null;
    /** A bigint: PostgreSQL hands it over as text. */
    peak_rss_bytes?: number | string | null;
  } | null;
}

export interface DeadDelivery extends DeliveryRow {
  entity_type: string;
  entity_id: string;
  status: string;
}

/** A running session as a sweep judges it: the row's clocks, its current leg and every unended leg. */
export interface RunningSession {
  id: string;
  status: string;
  started_at: number | null;
  updated_at: number;
  current_leg_id: string | null;
  /** The session's current reason: `session.running.linked_pending` marks a hold by its linked session. */
  status_reason_code: string | null;
  linked_session_id: string | null;
  /** The linked session's status, null when there is none or it no longer exists. */
  linked_status: string | null;
  /** The current leg (when it exists) followed by every other leg with no `ended_at`. */
  legs: LegRow[];
}

/** A leg's directories and its session: what `li state prune --files` checks before deleting a directory. */
export type LegDirs = Pick<LegRow, "id" | "session_id" | "state_root" | "artifact_root">;

/** What a sweep re-checks inside its write: still running, the same current leg, the same heartbeat. */
export interface SweepGuardRow {
  status: string;
  currentLegId: string | null;
  heartbeatAt: number | null;
}

/** The state `li wait` projects into its line: the target's own status plus its backing session. */
export interface WaitState {
  status: string | null;
  reason: string | null;
  /** The artifact root of the backing session's current leg, else the session's artifacts_path. */
  artifactDir: string | null;
  /** The command's own exit code (§8.1): the entity's column, else its backing session's. */
  exitCode: number | null;
}

/** One line of `li ls`: the entity plus, for sessions, its current leg. */
export interface RecentRow {
  kind: EntityKind;
  id: string;
  status: string;
  reason: string | null;
  created_at: number;
  updated_at: number;
  started_at: number | null;
  ended_at: number | null;
  leg_count: number | null;
  leg_started_at: number | null;
  leg_ended_at: number | null;
  /** The current leg's argv as stored (JSON text). */
  leg_command: string | null;
  /** The current leg's host (machine id + boot id) and readable name; null for other kinds and legs recorded without them. */
  leg_host_id: string | null;
  leg_host_name: string | null;
  /** What the current leg used (§8.7); null for other kinds, running legs and legs recorded before li kept it. */
  leg_cpu_user_seconds?: number | null;
  leg_cpu_system_seconds?: number | null;
  leg_peak_rss_bytes?: number | string | null;
  /** A session's first branch (the id `li agent -r` resumes); null for other kinds. */
  branch_id: string | null;
}

/** A spool entry replayed into the ledger (§17): recorded in the replay's transaction, so it applies once. */
export interface SpoolReplayRow {
  id: string;
  session_id: string;
  leg_id: string;
  host_id: string | null;
  spooled_at: number;
  replayed_at: number;
}

/** Where a queue's `parallel` is counted: on each host, or across every host of the ledger (§19). */
export const QUEUE_SCOPES = ["host", "fleet"] as const;
export type QueueScope = (typeof QUEUE_SCOPES)[number];

/** What `--after` may name: a run of a queue, a session (or a leg's run id, resolved to its session), an invocation, a play. */
export const DEPENDENCY_KINDS = ["schedule_run", "session", "invocation", "play"] as const;
export type DependencyKind = (typeof DEPENDENCY_KINDS)[number];

/** How a retry's delay grows: the same each time, or doubling per attempt. */
export const RETRY_BACKOFFS = ["fixed", "exp"] as const;
export type RetryBackoff = (typeof RETRY_BACKOFFS)[number];

/** A `queues` row (§19). */
export interface QueueRow {
  name: string;
  parallel: number;
  scope: QueueScope;
  paused: number;
  lease_attempts: number;
  created_at: number;
  updated_at: number;
}

/** A `schedule_runs` row with the columns of §19. */
export interface ScheduleRunRow {
  id: string;
  status: string;
  status_reason_code: string | null;
  status_reason_summary: string | null;
  status_evidence_refs: string | null;
  created_at: number;
  updated_at: number;
  invocation_id: string | null;
  started_at: number | null;
  ended_at: number | null;
  exit_code: number | null;
  queue: string | null;
  request_json: string | null;
  needs: string | null;
  leased_by: string | null;
  lease_expires_at: number | null;
  lease_seconds: number | null;
  attempts: number;
  session_id: string | null;
  chain_parent_id: string | null;
  chain_depth: number;
  retries: number;
  retry_delay: number | null;
  retry_backoff: RetryBackoff | null;
  retry_jitter: number;
  retry_at: number | null;
}

/** One `schedule_run_deps` row: run `run_id` waits for `depends_on_id`. */
export interface ScheduleDepRow {
  run_id: string;
  depends_on_kind: DependencyKind;
  depends_on_id: string;
  created_at: number;
}

/** A `watch_hosts` row: a host that takes scheduled runs, and its labels (a JSON array). */
export interface WatchHostRow {
  host_id: string;
  host_name: string | null;
  labels: string;
  seen_at: number;
}
