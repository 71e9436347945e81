// The read queries of §11/§13 on SQLite: raw prepared bun:sqlite statements (no drizzle), every lookup
// by index (primary keys, legs_run_id_idx, range scans for prefixes), so a million rows cost no more.

import type { Database, Statement } from "bun:sqlite";
import { POLICIES, type EntityKind } from "../../lifecycle/policy.ts";
import type { AdminEventRow, BranchRow, EntityRow, LegRow, TransitionRow, CallbackRow, DeliveryRow, RecentRow, WaitState } from "../rows.ts";
import type { LedgerReads, LookupKind, RecentFilter } from "../reads.ts";
import { SQLITE_DIALECT, SQLITE_VIEWS } from "./dialect.ts";
import type { ScheduleStatements } from "../rules/schedule.ts";
import type { MetricsStatements } from "../rules/metrics.ts";
import { idColumn, longestSharedPrefix, mergeRecent, neighboursOfManyStatement, neighboursStatement, sharedPrefixLengthsOf, recentKinds, recentStatement, waitStateOf, waitStateStatement, type ViewStatement } from "../rules/views.ts";

/** The next key after every string starting with `prefix`, for index range scans. */
const upperBound = (prefix: string) => prefix + "\uffff";

type Row = Record<string, unknown>;

export class SqliteReads implements LedgerReads {
  private readonly cache = new Map<string, Statement<Row, any[]>>();

  private scheduleStatements: ScheduleStatements | undefined;
  private metricsStatements: MetricsStatements | undefined;

  constructor(private readonly db: Database) {}

  // The scheduled runs' and the metrics' statements load when first used (li queue, li ui, /metrics), not
  // on every read command's start-up: li wait and li show on a session never need them.
  get schedule(): ScheduleStatements {
    if (this.scheduleStatements === undefined) {
      const { ScheduleStatements } = require("../rules/schedule.ts") as typeof import("../rules/schedule.ts");
      const { scheduleRunner } = require("./schedule.ts") as typeof import("./schedule.ts");
      this.scheduleStatements = new ScheduleStatements(scheduleRunner(this.db));
    }
    return this.scheduleStatements;
  }

  get metrics(): MetricsStatements {
    if (this.metricsStatements === undefined) {
      const { MetricsStatements } = require("../rules/metrics.ts") as typeof import("../rules/metrics.ts");
      const { scheduleRunner } = require("./schedule.ts") as typeof import("./schedule.ts");
      this.metricsStatements = new MetricsStatements(scheduleRunner(this.db), SQLITE_DIALECT);
    }
    return this.metricsStatements;
  }

  /** Prepares each statement once per connection (the wait loop re-runs the same few). */
  private q(sql: string): Statement<Row, any[]> {
    let statement = this.cache.get(sql);
    if (!statement) {
      statement = this.db.query<Row, any[]>(sql);
      this.cache.set(sql, statement);
    }
    return statement;
  }

  private all(statement: ViewStatement): Row[] {
    return this.q(statement.sql).all(...(statement.params as never[]));
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

  waitState(kind: EntityKind, id: string): WaitState | null {
    const [row] = this.all(waitStateStatement(SQLITE_VIEWS, kind, id));
    return row ? waitStateOf(row) : null;
  }

  changeCounter(): number {
    return (this.q("PRAGMA data_version").get()?.data_version as number | undefined) ?? 0;
  }

  sharedPrefixLength(id: string): number {
    const [row] = this.all(neighboursStatement(SQLITE_VIEWS, id));
    return longestSharedPrefix(id, Object.values(row ?? {}));
  }

  sharedPrefixLengths(ids: readonly string[]): Map<string, number> {
    return sharedPrefixLengthsOf(ids, ids.length === 0 ? [] : this.all(neighboursOfManyStatement(SQLITE_VIEWS, ids)));
  }

  listRecent(filter: RecentFilter): RecentRow[] {
    const perKind = recentKinds(filter).map((kind) => this.all(recentStatement(SQLITE_VIEWS, kind, filter)) as unknown as RecentRow[]);
    return mergeRecent(perKind, filter.limit);
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
    // The id breaks a tie of timestamps (a rejection and its retry at one clock reading), from the index.
    return this.q("SELECT * FROM admin_events WHERE entity_type = ? AND entity_id = ? ORDER BY created_at, id").all(kind, id) as unknown as AdminEventRow[];
  }

  legsOf(sessionId: string): LegRow[] {
    return this.q("SELECT * FROM legs WHERE session_id = ? ORDER BY seq").all(sessionId) as unknown as LegRow[];
  }

  branchesOf(sessionId: string): BranchRow[] {
    return this.q("SELECT * FROM branches WHERE session_id = ? ORDER BY created_at, id").all(sessionId) as unknown as BranchRow[];
  }
}
