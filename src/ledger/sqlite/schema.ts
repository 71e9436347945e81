// The ledger's tables for SQLite (SPEC §3); names follow the seeds so an operator's SQL keeps working.

import { sql } from "drizzle-orm";
import { check, index, integer, primaryKey, real, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import type { EntityKind } from "../../lifecycle/policy.ts";
import { SOURCES, CALLBACK_SCOPES, DELIVERY_STATES, DEPENDENCY_KINDS, QUEUE_SCOPES, RETRY_BACKOFFS } from "../rows.ts";
import { oneOf, plainLiveConsumer, statusIn } from "../schema-checks.ts";
import { FIRE_OUTCOMES, MISSED_POLICIES, OVERLAP_POLICIES } from "../../lifecycle/schedules.ts";

/** Columns every status-bearing entity carries: current status and its denormalized reason. */
const statusColumns = () => ({
  status: text("status").notNull(),
  status_reason_code: text("status_reason_code"),
  status_reason_summary: text("status_reason_summary"),
  status_evidence_refs: text("status_evidence_refs"),
  created_at: real("created_at").notNull(),
  updated_at: real("updated_at").notNull(),
});

export const sessions = sqliteTable(
  "sessions",
  {
    id: text("id").primaryKey(),
    progression_id: text("progression_id"),
    first_msg_id: text("first_msg_id"),
    last_msg_id: text("last_msg_id"),
    ...statusColumns(),
    started_at: real("started_at"),
    ended_at: real("ended_at"),
    invocation_id: text("invocation_id"),
    artifacts_path: text("artifacts_path"),
    artifact_contract_json: text("artifact_contract_json"),
    artifact_verification_json: text("artifact_verification_json"),
    node_metadata: text("node_metadata"),
    exit_code: integer("exit_code"),
    current_leg_id: text("current_leg_id"),
    linked_session_id: text("linked_session_id"),
    // The current leg's host, kept on the session row so a host filter is an index seek rather than a
    // read of every session's leg (written with current_leg_id; the machine part of its host id, MACHINE:BOOT).
    host_name: text("host_name"),
    host_machine: text("host_machine"),
  },
  (t) => [
    check("sessions_status_check", statusIn("session", t.status)),
    // Listings order by (updated_at, id) newest first: with id in the index no LIMIT makes the planner
    // sort the table instead (test/ledger/query-plans.test.ts reads every query's plan).
    index("sessions_status_idx").on(t.status, t.updated_at, t.id),
    index("sessions_invocation_idx").on(t.invocation_id, t.updated_at, t.id),
    index("sessions_updated_idx").on(t.updated_at, t.id),
    // The sweeps page through running sessions by id; only running rows are in it, so it stays small.
    // (status, id) rather than (id): without statistics the planner only prefers it over the status index so.
    index("sessions_running_idx").on(t.status, t.id).where(sql`${t.status} = 'running'`),
    // The prune nulls this soft reference per batch (§12.5); without an index that is a scan of every session.
    index("sessions_linked_idx").on(t.linked_session_id),
    // li ls / li ui's host filter: a host's newest sessions by name or by machine, in the listing's order.
    index("sessions_host_name_idx").on(t.host_name, t.updated_at, t.id),
    index("sessions_host_machine_idx").on(t.host_machine, t.updated_at, t.id),
    // With a status too (running on a busy host: its few running rows, not every row of the host).
    index("sessions_host_name_status_idx").on(t.host_name, t.status, t.updated_at, t.id),
    index("sessions_host_machine_status_idx").on(t.host_machine, t.status, t.updated_at, t.id),
  ],
);

export const branches = sqliteTable(
  "branches",
  {
    id: text("id").primaryKey(),
    session_id: text("session_id").notNull(),
    name: text("name"),
    metadata: text("metadata"),
    created_at: real("created_at").notNull(),
    updated_at: real("updated_at").notNull(),
  },
  (t) => [index("branches_session_idx").on(t.session_id, t.created_at, t.id)],
);

export const messages = sqliteTable(
  "messages",
  {
    id: text("id").primaryKey(),
    session_id: text("session_id").notNull(),
    branch_id: text("branch_id"),
    leg_id: text("leg_id"),
    role: text("role").notNull(),
    content: text("content").notNull(),
    truncated: integer("truncated").notNull().default(0),
    created_at: real("created_at").notNull(),
  },
  (t) => [index("messages_session_idx").on(t.session_id, t.created_at, t.id), index("messages_leg_idx").on(t.leg_id)],
);

export const legs = sqliteTable(
  "legs",
  {
    id: text("id").primaryKey(),
    session_id: text("session_id").notNull(),
    seq: integer("seq").notNull(),
    run_id: text("run_id").notNull(),
    state_root: text("state_root").notNull(),
    artifact_root: text("artifact_root").notNull(),
    command: text("command").notNull(),
    cwd: text("cwd"),
    pid: integer("pid"),
    pid_start_ticks: integer("pid_start_ticks"),
    boot_id: text("boot_id"),
    host_id: text("host_id"),
    /** A readable name for host_id (the supervisor's host name), for views across hosts (§14). */
    host_name: text("host_name"),
    command_pid: integer("command_pid"),
    command_start_ticks: integer("command_start_ticks"),
    started_at: real("started_at").notNull(),
    heartbeat_at: real("heartbeat_at"),
    kill_requested_at: real("kill_requested_at"),
    ended_at: real("ended_at"),
    status: text("status").notNull(),
    reason_code: text("reason_code"),
    exit_code: integer("exit_code"),
    deferred: integer("deferred").notNull().default(0),
    /** The leg's message endpoints (the session's own columns are outside the guarded write's allowlist, §4). */
    first_msg_id: text("first_msg_id"),
    last_msg_id: text("last_msg_id"),
    /** How the leg's processes were found (SPEC §8.7): cgroup, environ or group; its cgroup's directory. */
    containment: text("containment"),
    cgroup_path: text("cgroup_path"),
    /** What the kernel counted for the command's tree (SPEC §8.7). */
    cpu_user_seconds: real("cpu_user_seconds"),
    cpu_system_seconds: real("cpu_system_seconds"),
    peak_rss_bytes: integer("peak_rss_bytes"),
  },
  (t) => [
    check("legs_status_check", statusIn("session", t.status)),
    uniqueIndex("legs_run_id_idx").on(t.run_id),
    uniqueIndex("legs_session_seq_idx").on(t.session_id, t.seq),
    index("legs_open_idx").on(t.ended_at),
    // prune --files asks which legs use a directory (or one inside it): range scans, never a scan of every leg.
    index("legs_state_root_idx").on(t.state_root),
    index("legs_artifact_root_idx").on(t.artifact_root),
  ],
);

export const invocations = sqliteTable(
  "invocations",
  {
    id: text("id").primaryKey(),
    ...statusColumns(),
    started_at: real("started_at"),
    ended_at: real("ended_at"),
  },
  (t) => [
    check("invocations_status_check", statusIn("invocation", t.status)),
    index("invocations_status_idx").on(t.status, t.updated_at, t.id),
    index("invocations_updated_idx").on(t.updated_at, t.id),
  ],
);

export const plays = sqliteTable(
  "plays",
  {
    id: text("id").primaryKey(),
    ...statusColumns(),
    session_id: text("session_id"),
    started_at: real("started_at"),
    ended_at: real("ended_at"),
    exit_code: integer("exit_code"),
  },
  (t) => [
    check("plays_status_check", statusIn("play", t.status)),
    index("plays_status_idx").on(t.status, t.updated_at, t.id),
    index("plays_updated_idx").on(t.updated_at, t.id),
    index("plays_session_idx").on(t.session_id),
  ],
);

export const scheduleRuns = sqliteTable(
  "schedule_runs",
  {
    id: text("id").primaryKey(),
    ...statusColumns(),
    invocation_id: text("invocation_id"),
    started_at: real("started_at"),
    ended_at: real("ended_at"),
    exit_code: integer("exit_code"),
    // §19: the queue it waits in and the whole leg request (argv, cwd, env allowlist, leg options), as JSON.
    queue: text("queue"),
    request_json: text("request_json"),
    /** Labels a host's `watch.labels` must cover (a JSON array), or null. */
    needs: text("needs"),
    /** The lease: the host that holds it, until when (the ledger's clock), how long a renewal extends it. */
    leased_by: text("leased_by"),
    lease_expires_at: real("lease_expires_at"),
    lease_seconds: real("lease_seconds"),
    /** How many leases this run has had (an expired one counts against `queues.lease_attempts`). */
    attempts: integer("attempts").notNull().default(0),
    /** The session of the leg started for the current lease. */
    session_id: text("session_id"),
    /** A retry is a new run chained to the attempt before it. */
    chain_parent_id: text("chain_parent_id"),
    chain_depth: integer("chain_depth").notNull().default(0),
    /** Retries left after this attempt, the base delay (seconds), and how it grows. */
    retries: integer("retries").notNull().default(0),
    retry_delay: real("retry_delay"),
    retry_backoff: text("retry_backoff"),
    retry_jitter: integer("retry_jitter").notNull().default(0),
    /** While in retry_wait: when the next attempt is due. */
    retry_at: real("retry_at"),
  },
  (t) => [
    check("schedule_runs_status_check", statusIn("schedule_run", t.status)),
    check("schedule_runs_backoff_check", sql`${t.retry_backoff} IS NULL OR ${oneOf(t.retry_backoff, RETRY_BACKOFFS)}`),
    index("schedule_runs_status_idx").on(t.status, t.updated_at, t.id),
    index("schedule_runs_updated_idx").on(t.updated_at, t.id),
    index("schedule_runs_invocation_idx").on(t.invocation_id),
    // Leasing takes the oldest runs of one queue in one status; counting a queue's running runs uses the same.
    index("schedule_runs_queue_idx").on(t.queue, t.status, t.created_at, t.id),
    // `li queue ls` counts each queue's active runs by status from this index alone (covering, in its order):
    // no table row read, no sort, nothing finished touched.
    index("schedule_runs_queue_counts_idx").on(t.status, t.queue, t.created_at, t.retry_at),
    index("schedule_runs_lease_idx").on(t.status, t.lease_expires_at).where(sql`${t.status} = 'running'`),
    index("schedule_runs_retry_idx").on(t.status, t.retry_at).where(sql`${t.status} = 'retry_wait'`),
    index("schedule_runs_session_idx").on(t.session_id),
    index("schedule_runs_chain_idx").on(t.chain_parent_id),
  ],
);

/** What a run waits for (`--after`): each dependency by kind and id (§19). */
export const scheduleRunDeps = sqliteTable(
  "schedule_run_deps",
  {
    run_id: text("run_id").notNull(),
    depends_on_kind: text("depends_on_kind").notNull(),
    depends_on_id: text("depends_on_id").notNull(),
    created_at: real("created_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.run_id, t.depends_on_id] }),
    check("schedule_run_deps_kind_check", oneOf(t.depends_on_kind, DEPENDENCY_KINDS)),
    index("schedule_run_deps_target_idx").on(t.depends_on_id, t.run_id),
  ],
);

/** Hosts that take scheduled runs and the labels they offer (`watch.labels`), so a submit can say when no host has a label. */
export const watchHosts = sqliteTable("watch_hosts", {
  host_id: text("host_id").primaryKey(),
  host_name: text("host_name"),
  /** A JSON array of labels. */
  labels: text("labels").notNull(),
  seen_at: real("seen_at").notNull(),
});

/** Queues as rows, so every watcher on every host sees a limit or a pause at its next pass (§19). */
export const queues = sqliteTable(
  "queues",
  {
    name: text("name").primaryKey(),
    /** At most this many running at once (0 = unlimited), per host or across the fleet. */
    parallel: integer("parallel").notNull(),
    scope: text("scope").notNull(),
    paused: integer("paused").notNull().default(0),
    lease_attempts: integer("lease_attempts").notNull(),
    created_at: real("created_at").notNull(),
    updated_at: real("updated_at").notNull(),
  },
  (t) => [
    check("queues_scope_check", oneOf(t.scope, QUEUE_SCOPES)),
    check("queues_parallel_check", sql`${t.parallel} >= 0`),
    check("queues_lease_attempts_check", sql`${t.lease_attempts} >= 1`),
  ],
);

export const shows = sqliteTable(
  "shows",
  { id: text("id").primaryKey(), ...statusColumns() },
  (t) => [
    check("shows_status_check", statusIn("show", t.status)),
    index("shows_status_idx").on(t.status, t.updated_at, t.id),
    index("shows_updated_idx").on(t.updated_at, t.id),
  ],
);

export const teams = sqliteTable(
  "teams",
  { id: text("id").primaryKey(), ...statusColumns() },
  (t) => [
    check("teams_status_check", statusIn("team", t.status)),
    index("teams_status_idx").on(t.status, t.updated_at, t.id),
    index("teams_updated_idx").on(t.updated_at, t.id),
  ],
);

export const statusTransitions = sqliteTable(
  "status_transitions",
  {
    id: text("id").primaryKey(),
    /** Increasing in commit order (assigned under the write lock); consumer watermarks use it. */
    seq: integer("seq").notNull(),
    entity_type: text("entity_type").notNull(),
    entity_id: text("entity_id").notNull(),
    previous_status: text("previous_status"),
    status: text("status").notNull(),
    reason_code: text("reason_code").notNull(),
    reason_summary: text("reason_summary"),
    evidence_refs: text("evidence_refs"),
    source: text("source").notNull(),
    actor: text("actor"),
    created_at: real("created_at").notNull(),
    metadata: text("metadata"),
    /** 1 when this row is a terminal event (§2): applied, changed status, landed terminal, execution kind. */
    terminal_event: integer("terminal_event").notNull().default(0),
    /** Sessions only: the current leg once this transition applied, so a notice is matched to its leg. */
    leg_id: text("leg_id"),
  },
  (t) => [
    uniqueIndex("status_transitions_seq_idx").on(t.seq),
    index("status_transitions_entity_idx").on(t.entity_type, t.entity_id, t.created_at, t.seq),
    index("status_transitions_events_idx").on(t.terminal_event, t.seq),
    check("status_transitions_source_check", oneOf(t.source, SOURCES)),
  ],
);

export const adminEvents = sqliteTable(
  "admin_events",
  {
    id: text("id").primaryKey(),
    event_type: text("event_type").notNull(),
    entity_type: text("entity_type"),
    entity_id: text("entity_id"),
    actor: text("actor"),
    justification: text("justification"),
    payload: text("payload"),
    created_at: real("created_at").notNull(),
  },
  (t) => [index("admin_events_entity_idx").on(t.entity_type, t.entity_id, t.created_at, t.id), index("admin_events_type_idx").on(t.event_type)],
);

export const terminalCallbacks = sqliteTable(
  "terminal_callbacks",
  {
    id: text("id").primaryKey(),
    /** 'leg' (bound to one leg's session) or 'standing' (a named handler over many entities). */
    scope: text("scope").notNull(),
    name: text("name"),
    consumer: text("consumer").notNull(),
    session_id: text("session_id"),
    leg_id: text("leg_id"),
    argv: text("argv").notNull(),
    filter_kinds: text("filter_kinds"),
    filter_ids: text("filter_ids"),
    origin: text("origin").notNull(),
    host_id: text("host_id").notNull(),
    /** The registering uid (§18): a process runs only its own uid's handlers; null (older rows) runs nowhere. */
    uid: integer("uid"),
    enabled: integer("enabled").notNull().default(1),
    created_at: real("created_at").notNull(),
    retired_at: real("retired_at"),
  },
  (t) => [
    check("terminal_callbacks_scope_check", oneOf(t.scope, CALLBACK_SCOPES)),
    uniqueIndex("terminal_callbacks_consumer_idx").on(t.consumer),
    index("terminal_callbacks_session_idx").on(t.session_id, t.created_at, t.id),
    index("terminal_callbacks_leg_idx").on(t.leg_id),
    // Passes over handlers read only the live ones; settled leg registrations accumulate beside them.
    index("terminal_callbacks_live_idx").on(t.scope, t.host_id).where(sql`${t.retired_at} IS NULL`),
  ],
);

export const consumers = sqliteTable(
  "consumers",
  {
    name: text("name").primaryKey(),
    watermark: integer("watermark").notNull(),
    registered_at: real("registered_at").notNull(),
    retired_at: real("retired_at"),
  },
  (t) => [
    // The prune's owed check reaches plain consumers through this, not every registration's consumer.
    index("consumers_plain_live_idx").on(t.name).where(sql.raw(plainLiveConsumer("name", "retired_at"))),
  ],
);

export const terminalDeliveries = sqliteTable(
  "terminal_deliveries",
  {
    transition_id: text("transition_id").notNull(),
    consumer: text("consumer").notNull(),
    state: text("state").notNull(),
    attempts: integer("attempts").notNull().default(0),
    last_error: text("last_error"),
    claimed_until: real("claimed_until"),
    next_attempt_at: real("next_attempt_at"),
    acked_at: real("acked_at"),
    created_at: real("created_at").notNull(),
    updated_at: real("updated_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.transition_id, t.consumer] }),
    check("terminal_deliveries_state_check", oneOf(t.state, DELIVERY_STATES)),
    index("terminal_deliveries_consumer_idx").on(t.consumer, t.state),
    index("terminal_deliveries_state_idx").on(t.state, t.updated_at, t.consumer),
  ],
);

/**
 * Spool entries replayed into this ledger (§17): the entry id is recorded in the replay's own
 * transaction, so an entry whose file survived (li killed between the commit and the unlink) is
 * recognised and removed without being applied twice.
 */
export const spoolReplays = sqliteTable("spool_replays", {
  id: text("id").primaryKey(),
  session_id: text("session_id").notNull(),
  leg_id: text("leg_id").notNull(),
  host_id: text("host_id"),
  spooled_at: real("spooled_at").notNull(),
  replayed_at: real("replayed_at").notNull(),
});

/**
 * The highest `seq` ever assigned (one row, id 1). A transition's seq is one above the larger of this
 * and MAX(seq), and this row is advanced in the same transaction: `li state prune` may delete the newest
 * history rows, and a seq handed out again could sit at or below a consumer's watermark (SPEC §9).
 * The migration that creates it seeds it from the history's MAX(seq).
 */
export const seqHighWater = sqliteTable(
  "seq_high_water",
  {
    id: integer("id").primaryKey(),
    seq: integer("seq").notNull(),
  },
  (t) => [check("seq_high_water_one_row_check", sql`${t.id} = 1`)],
);

/**
 * Cron schedules (SPEC §19): `li schedule add` writes one; the watchers fire it. `next_due_at` is the
 * cursor, the first due time no watcher has decided yet (null: none comes again), moved by a guarded
 * UPDATE in the same transaction as the fire records of the due times it passes.
 */
export const schedules = sqliteTable(
  "schedules",
  {
    id: text("id").primaryKey(),
    name: text("name").notNull(),
    cron: text("cron").notNull(),
    time_zone: text("time_zone").notNull(),
    overlap: text("overlap").notNull(),
    missed: text("missed").notNull(),
    queue: text("queue").notNull(),
    /** The leg request each fire submits, as the queue's submit stores it. */
    request_json: text("request_json").notNull(),
    paused: integer("paused").notNull().default(0),
    next_due_at: real("next_due_at"),
    /** The run of the newest fire that submitted one (the overlap check follows it). */
    last_run_id: text("last_run_id"),
    created_at: real("created_at").notNull(),
    updated_at: real("updated_at").notNull(),
  },
  (t) => [
    uniqueIndex("schedules_name_idx").on(t.name),
    check("schedules_overlap_check", oneOf(t.overlap, OVERLAP_POLICIES)),
    check("schedules_missed_check", oneOf(t.missed, MISSED_POLICIES)),
    // Every watcher pass asks which schedules are due: only active ones are in it.
    index("schedules_due_idx").on(t.next_due_at).where(sql`${t.paused} = 0`),
  ],
);

/**
 * One decision per schedule and due time (SPEC §19): fired, or skipped as missed or overlapping. The
 * primary key is what makes a due time fire once across the fleet: a second watcher's insert of the same
 * (schedule, due time) fails and its whole transaction rolls back.
 */
export const scheduleFires = sqliteTable(
  "schedule_fires",
  {
    schedule_id: text("schedule_id").notNull(),
    due_at: real("due_at").notNull(),
    outcome: text("outcome").notNull(),
    /** The schedule_run recorded for it (queued, or created skipped). */
    run_id: text("run_id"),
    host_id: text("host_id"),
    decided_at: real("decided_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.schedule_id, t.due_at] }), check("schedule_fires_outcome_check", oneOf(t.outcome, FIRE_OUTCOMES))],
);

/** The table of each entity kind, derived from the registry's table names. */
export const ENTITY_TABLES = {
  session: sessions,
  invocation: invocations,
  schedule_run: scheduleRuns,
  play: plays,
  show: shows,
  team: teams,
} as const satisfies Record<EntityKind, unknown>;
