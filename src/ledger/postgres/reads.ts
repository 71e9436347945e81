// The read queries of §11/§13 on PostgreSQL, the twin of src/ledger/sqlite/reads.ts: every lookup by
// index (primary keys, legs_run_id_idx, range scans over ids compared bytewise for prefixes), each row
// converted to li's types (rows.ts) before it leaves.

import type { SQL } from "bun";
import { ENTITY_KINDS, POLICIES, type EntityKind } from "../../lifecycle/policy.ts";
import type { LedgerReads, LookupKind, RecentFilter } from "../reads.ts";
import type { AdminEventRow, BranchRow, CallbackRow, DeliveryRow, EntityRow, LegRow, RecentRow, TransitionRow, WaitState } from "../rows.ts";
import * as legStore from "./legs.ts";
import { num, transitionRow } from "./row-numbers.ts";

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

/**
 * The next key after every string starting with `prefix`, for index range scans. Id columns compare
 * bytewise (COLLATE "C", migration 0004_ids_bytewise), so U+10FFFF — the highest code point, the highest UTF-8 bytes
 * an id can start with after the prefix — bounds them all.
 */
const upperBound = (prefix: string) => prefix + "\u{10FFFF}";

function commonPrefix(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  return i;
}

type Row = Record<string, unknown>;
const str = (value: unknown): string | null => (value as string | null | undefined) ?? null;

export class PgReads implements LedgerReads {
  /** `sql` gives the pool (connected on first use) and maps a failure to the ledger error it stands for. */
  constructor(private readonly run: <T>(fn: (sql: SQL) => Promise<T>) => Promise<T>) {}

  private query<T = Row>(text: string, params: unknown[] = []): Promise<T[]> {
    return this.run(async (sql): Promise<T[]> => [...(await sql.unsafe(text, params))]);
  }

  async exists(kind: LookupKind, id: string): Promise<boolean> {
    const { table, column } = idColumn(kind);
    return (await this.query(`SELECT 1 AS x FROM ${table} WHERE ${column} = $1`, [id])).length > 0;
  }

  async idsWithPrefix(kind: LookupKind, prefix: string, limit: number): Promise<string[]> {
    const { table, column } = idColumn(kind);
    const rows = await this.query(`SELECT ${column} AS id FROM ${table} WHERE ${column} >= $1 AND ${column} < $2 ORDER BY ${column} LIMIT $3`, [prefix, upperBound(prefix), limit]);
    return rows.map((r) => r.id as string);
  }

  async owningSession(kind: "branch" | "run", id: string): Promise<string | null> {
    const { table, column } = idColumn(kind);
    const [row] = await this.query(`SELECT session_id FROM ${table} WHERE ${column} = $1`, [id]);
    return str(row?.session_id);
  }

  async waitState(kind: EntityKind, id: string): Promise<WaitState | null> {
    const table = POLICIES[kind].table;
    // The target and the session behind it in one round trip: a session itself, a play's session, the
    // newest session of an invocation (or of a schedule run's invocation), by sessions_invocation_idx.
    const backing =
      kind === "session"
        ? "e.id"
        : kind === "play"
          ? "e.session_id"
          : kind === "invocation" || kind === "schedule_run"
            ? `(SELECT s.id FROM sessions s WHERE s.invocation_id = ${kind === "invocation" ? "e.id" : "e.invocation_id"} ORDER BY s.updated_at DESC, s.id DESC LIMIT 1)`
            : "NULL::text";
    const own = kind === "play" || kind === "schedule_run" ? "e.exit_code" : "NULL::integer";
    const [row] = await this.query(
      `SELECT e.status, e.status_reason_code AS reason, ${own} AS own_exit, COALESCE(l.artifact_root, b.artifacts_path) AS artifact_dir, b.exit_code AS backing_exit
       FROM ${table} e LEFT JOIN sessions b ON b.id = ${backing} LEFT JOIN legs l ON l.id = b.current_leg_id
       WHERE e.id = $1`,
      [id],
    );
    if (!row) return null;
    return { status: str(row.status), reason: str(row.reason), artifactDir: str(row.artifact_dir), exitCode: num(row.own_exit) ?? num(row.backing_exit) };
  }

  /** The newest seq: assigned under a lock held to commit (backend.ts), so it grows with every committed status write. */
  async changeCounter(): Promise<number> {
    const [row] = await this.query("SELECT COALESCE(MAX(seq), 0) AS seq FROM status_transitions");
    return num(row?.seq) ?? 0;
  }

  async sharedPrefixLength(id: string): Promise<number> {
    // Both neighbours of `id` in every id index, in one round trip.
    const parts = LOOKUP_KINDS.map((kind) => {
      const { table, column } = idColumn(kind);
      return `(SELECT ${column} AS id FROM ${table} WHERE ${column} < $1 ORDER BY ${column} DESC LIMIT 1)
              UNION ALL (SELECT ${column} AS id FROM ${table} WHERE ${column} > $1 ORDER BY ${column} LIMIT 1)`;
    });
    const rows = await this.query(parts.join(" UNION ALL "), [id]);
    let longest = 0;
    for (const row of rows) if (typeof row.id === "string") longest = Math.max(longest, commonPrefix(id, row.id));
    return longest;
  }

  async listRecent(filter: RecentFilter): Promise<RecentRow[]> {
    const kinds = filter.kinds.filter((kind) => filter.status === undefined || POLICIES[kind].statuses.has(filter.status));
    const perKind = await Promise.all(kinds.map((kind) => this.recentOf(kind, filter)));
    const rows = perKind.flat();
    rows.sort((a, b) => b.updated_at - a.updated_at || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
    return rows.slice(0, filter.limit);
  }

  private async recentOf(kind: EntityKind, filter: RecentFilter): Promise<RecentRow[]> {
    const t = POLICIES[kind].table;
    const times = TIMED.has(kind) ? "e.started_at, e.ended_at" : "NULL::float8 AS started_at, NULL::float8 AS ended_at";
    const legs =
      kind === "session"
        ? `(SELECT COUNT(*) FROM legs c WHERE c.session_id = e.id) AS leg_count, l.started_at AS leg_started_at, l.ended_at AS leg_ended_at, l.command AS leg_command, l.host_id AS leg_host_id, l.host_name AS leg_host_name,
           (SELECT b.id FROM branches b WHERE b.session_id = e.id ORDER BY b.created_at, b.id LIMIT 1) AS branch_id
           FROM ${t} e LEFT JOIN legs l ON l.id = e.current_leg_id`
        : `NULL::integer AS leg_count, NULL::float8 AS leg_started_at, NULL::float8 AS leg_ended_at, NULL::text AS leg_command, NULL::text AS leg_host_id, NULL::text AS leg_host_name, NULL::text AS branch_id FROM ${t} e`;
    // Only the predicates in use, so the planner can pick the (status, updated_at, id) or (updated_at, id) index.
    const where: string[] = [];
    const params: unknown[] = [];
    if (filter.status !== undefined) params.push(filter.status), where.push(`e.status = $${params.length}`);
    if (filter.since !== undefined) params.push(filter.since), where.push(`e.updated_at >= $${params.length}`);
    params.push(filter.limit);
    const rows = await this.query(
      `SELECT e.id, e.status, e.status_reason_code AS reason, e.created_at, e.updated_at, ${times}, ${legs}
       ${where.length > 0 ? `WHERE ${where.join(" AND ")}` : ""}
       ORDER BY e.updated_at DESC, e.id DESC LIMIT $${params.length}`,
      params,
    );
    return rows.map((r) => ({ ...(r as unknown as RecentRow), kind, leg_count: num(r.leg_count) }));
  }

  async listCallbacks(sessionId: string): Promise<CallbackRow[]> {
    return this.query<CallbackRow>("SELECT * FROM terminal_callbacks WHERE session_id = $1 ORDER BY created_at, id", [sessionId]);
  }

  listDeliveries(kind: EntityKind, id: string): Promise<DeliveryRow[]> {
    return this.query<DeliveryRow>(
      `SELECT d.* FROM terminal_deliveries d JOIN status_transitions t ON t.id = d.transition_id
       WHERE t.entity_type = $1 AND t.entity_id = $2 ORDER BY t.created_at, t.seq, d.consumer`,
      [kind, id],
    );
  }

  async entityRow(kind: EntityKind, id: string): Promise<EntityRow | null> {
    const [row] = await this.query<EntityRow>(`SELECT * FROM ${POLICIES[kind].table} WHERE id = $1`, [id]);
    return row ?? null;
  }

  async transitionsOf(kind: EntityKind, id: string): Promise<TransitionRow[]> {
    const rows = await this.query("SELECT * FROM status_transitions WHERE entity_type = $1 AND entity_id = $2 ORDER BY created_at, seq", [kind, id]);
    return rows.map(transitionRow);
  }

  adminEventsOf(kind: EntityKind, id: string): Promise<AdminEventRow[]> {
    return this.query<AdminEventRow>("SELECT * FROM admin_events WHERE entity_type = $1 AND entity_id = $2 ORDER BY created_at", [kind, id]);
  }

  legsOf(sessionId: string): Promise<LegRow[]> {
    return this.run((sql) => legStore.listLegs(sql, sessionId));
  }

  branchesOf(sessionId: string): Promise<BranchRow[]> {
    return this.run((sql) => legStore.listBranches(sql, sessionId));
  }
}
