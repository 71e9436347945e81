// The read queries of §11/§13 on SQLite: raw prepared bun:sqlite statements (no drizzle), every lookup
// by index (primary keys, legs_run_id_idx, range scans for prefixes), so a million rows cost no more.

import type { Database, Statement } from "bun:sqlite";
import { ENTITY_KINDS, POLICIES, type EntityKind } from "../../lifecycle/policy.ts";
import type { AdminEventRow, BranchRow, EntityRow, LegRow, TransitionRow, CallbackRow, DeliveryRow, RecentRow, WaitState } from "../rows.ts";
import type { LedgerReads, LookupKind, RecentFilter } from "../reads.ts";

/** Table and id column of every kind an id can be looked up in. */
function idColumn(kind: LookupKind): { table: string; column: string } {
  if (kind === "branch") return { table: "branches", column: "id" };
  if (kind === "run") return { table: "legs", column: "run_id" };
  return { table: POLICIES[kind].table, column: "id" };
}

/** Every kind an id can be typed as (order does not matter: each is probed for its neighbours). */
const LOOKUP_KINDS: readonly LookupKind[] = [...ENTITY_KINDS, "branch", "run"];

/** Kinds whose tables carry started_at/ended_at (shows and teams do not). */
const TIMED: ReadonlySet<EntityKind> = new Set(["session", "invocation", "play", "schedule_run"]);

/** The next key after every string starting with `prefix`, for index range scans. */
const upperBound = (prefix: string) => prefix + "\uffff";

function commonPrefix(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  return i;
}

type Row = Record<string, unknown>;

export class SqliteReads implements LedgerReads {
  private readonly cache = new Map<string, Statement<Row, any[]>>();

  constructor(private readonly db: Database) {}

  /** Prepares each statement once per connection (the wait loop re-runs the same few). */
  private q(sql: string): Statement<Row, any[]> {
    let statement = this.cache.get(sql);
    if (!statement) {
      statement = this.db.query<Row, any[]>(sql);
      this.cache.set(sql, statement);
    }
    return statement;
  }

  exists(kind: LookupKind, id: string): boolean {
    const { table, column } = idColumn(kind);
    return this.q(`SELECT 1 AS x FROM ${table} WHERE ${column} = ?`).get(id) !== null;
  }

  idsWithPrefix(kind: LookupKind, prefix: string, limit: number): string[] {
    const { table, column } = idColumn(kind);
    const rows = this.q(`SELECT ${column} AS id FROM ${table} WHERE ${column} >= ? AND ${column} < ? ORDER BY ${column} LIMIT ?`).all(prefix, upperBound(prefix), limit);
    return rows.map((r) => r.id as string);
  }

  owningSession(kind: "branch" | "run", id: string): string | null {
    const { table, column } = idColumn(kind);
    const row = this.q(`SELECT session_id FROM ${table} WHERE ${column} = ?`).get(id);
    return (row?.session_id as string | undefined) ?? null;
  }

  /** Artifact root of the current leg (else artifacts_path) and exit code of one session. */
  private sessionBacking(sessionId: string | null): { artifactDir: string | null; exitCode: number | null } {
    if (!sessionId) return { artifactDir: null, exitCode: null };
    const row = this.q(
      `SELECT COALESCE(l.artifact_root, s.artifacts_path) AS artifact_dir, s.exit_code AS exit_code
       FROM sessions s LEFT JOIN legs l ON l.id = s.current_leg_id WHERE s.id = ?`,
    ).get(sessionId);
    return { artifactDir: (row?.artifact_dir as string | null) ?? null, exitCode: (row?.exit_code as number | null) ?? null };
  }

  /** The invocation's most recently updated session (sessions_invocation_idx). */
  private newestSessionOf(invocationId: string | null): string | null {
    if (!invocationId) return null;
    const row = this.q(`SELECT id FROM sessions WHERE invocation_id = ? ORDER BY updated_at DESC, id DESC LIMIT 1`).get(invocationId);
    return (row?.id as string | undefined) ?? null;
  }

  /** The session whose leg stands behind a wait target: itself, a play's, or an invocation's newest. */
  private backingSessionOf(kind: EntityKind, id: string, row: Row): string | null {
    switch (kind) {
      case "session":
        return id;
      case "invocation":
        return this.newestSessionOf(id);
      case "play":
        return (row.session_id as string | null) ?? null;
      case "schedule_run":
        return this.newestSessionOf((row.invocation_id as string | null) ?? null);
      default:
        return null;
    }
  }

  waitState(kind: EntityKind, id: string): WaitState | null {
    const table = POLICIES[kind].table;
    const extra = kind === "play" ? ", session_id, exit_code" : kind === "schedule_run" ? ", invocation_id, exit_code" : "";
    const row = this.q(`SELECT status, status_reason_code AS reason${extra} FROM ${table} WHERE id = ?`).get(id);
    if (!row) return null;
    const backing = this.sessionBacking(this.backingSessionOf(kind, id, row));
    const own = (row.exit_code as number | null | undefined) ?? null;
    return { status: (row.status as string | null) ?? null, reason: (row.reason as string | null) ?? null, artifactDir: backing.artifactDir, exitCode: own ?? backing.exitCode };
  }

  changeCounter(): number {
    return (this.q("PRAGMA data_version").get()?.data_version as number | undefined) ?? 0;
  }

  sharedPrefixLength(id: string): number {
    let longest = 0;
    for (const kind of LOOKUP_KINDS) {
      const { table, column } = idColumn(kind);
      const before = this.q(`SELECT ${column} AS id FROM ${table} WHERE ${column} < ? ORDER BY ${column} DESC LIMIT 1`).get(id);
      const after = this.q(`SELECT ${column} AS id FROM ${table} WHERE ${column} > ? ORDER BY ${column} LIMIT 1`).get(id);
      for (const neighbour of [before?.id, after?.id]) if (typeof neighbour === "string") longest = Math.max(longest, commonPrefix(id, neighbour));
    }
    return longest;
  }

  listRecent(filter: RecentFilter): RecentRow[] {
    const rows: RecentRow[] = [];
    for (const kind of filter.kinds) {
      if (filter.status !== undefined && !POLICIES[kind].statuses.has(filter.status)) continue;
      const t = POLICIES[kind].table;
      const times = TIMED.has(kind) ? "e.started_at, e.ended_at" : "NULL AS started_at, NULL AS ended_at";
      const legs =
        kind === "session"
          ? `(SELECT COUNT(*) FROM legs c WHERE c.session_id = e.id) AS leg_count, l.started_at AS leg_started_at, l.ended_at AS leg_ended_at, l.command AS leg_command, l.host_id AS leg_host_id, l.host_name AS leg_host_name,
             (SELECT b.id FROM branches b WHERE b.session_id = e.id ORDER BY b.created_at, b.id LIMIT 1) AS branch_id
             FROM ${t} e LEFT JOIN legs l ON l.id = e.current_leg_id`
          : `NULL AS leg_count, NULL AS leg_started_at, NULL AS leg_ended_at, NULL AS leg_command, NULL AS leg_host_id, NULL AS leg_host_name, NULL AS branch_id FROM ${t} e`;
      // Only the predicates in use, so the planner can pick (status, updated_at) or updated_at indexes
      // (an `?1 IS NULL OR …` form scans every row: 0.25 s for `--status failed` on a million sessions).
      const where: string[] = [];
      const params: (string | number)[] = [];
      if (filter.status !== undefined) where.push("e.status = ?"), params.push(filter.status);
      if (filter.since !== undefined) where.push("e.updated_at >= ?"), params.push(filter.since);
      const found = this.q(
        `SELECT '${kind}' AS kind, e.id, e.status, e.status_reason_code AS reason, e.created_at, e.updated_at, ${times}, ${legs}
         ${where.length > 0 ? `WHERE ${where.join(" AND ")}` : ""}
         ORDER BY e.updated_at DESC, e.id DESC LIMIT ?`,
      ).all(...params, filter.limit);
      rows.push(...(found as unknown as RecentRow[]));
    }
    rows.sort((a, b) => b.updated_at - a.updated_at || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
    return rows.slice(0, filter.limit);
  }

  listCallbacks(sessionId: string): CallbackRow[] {
    return this.q(`SELECT * FROM terminal_callbacks WHERE session_id = ? ORDER BY created_at, id`).all(sessionId) as unknown as CallbackRow[];
  }

  listDeliveries(kind: EntityKind, id: string): DeliveryRow[] {
    return this.q(
      `SELECT d.* FROM terminal_deliveries d JOIN status_transitions t ON t.id = d.transition_id
       WHERE t.entity_type = ? AND t.entity_id = ? ORDER BY t.created_at, t.seq, d.consumer`,
    ).all(kind, id) as unknown as DeliveryRow[];
  }

  entityRow(kind: EntityKind, id: string): EntityRow | null {
    return (this.q(`SELECT * FROM ${POLICIES[kind].table} WHERE id = ?`).get(id) as EntityRow | null) ?? null;
  }

  transitionsOf(kind: EntityKind, id: string): TransitionRow[] {
    return this.q("SELECT * FROM status_transitions WHERE entity_type = ? AND entity_id = ? ORDER BY created_at, seq").all(kind, id) as unknown as TransitionRow[];
  }

  adminEventsOf(kind: EntityKind, id: string): AdminEventRow[] {
    return this.q("SELECT * FROM admin_events WHERE entity_type = ? AND entity_id = ? ORDER BY created_at").all(kind, id) as unknown as AdminEventRow[];
  }

  legsOf(sessionId: string): LegRow[] {
    return this.q("SELECT * FROM legs WHERE session_id = ? ORDER BY seq").all(sessionId) as unknown as LegRow[];
  }

  branchesOf(sessionId: string): BranchRow[] {
    return this.q("SELECT * FROM branches WHERE session_id = ? ORDER BY created_at, id").all(sessionId) as unknown as BranchRow[];
  }
}
