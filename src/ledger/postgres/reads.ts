// The read queries of §11/§13 on PostgreSQL, the twin of src/ledger/sqlite/reads.ts: every lookup by
// index (primary keys, legs_run_id_idx, range scans over ids compared bytewise for prefixes), each row
// converted to li's types (rows.ts) before it leaves.

import type { ScheduleStatements } from "../rules/schedule.ts";
import type { MetricsStatements } from "../rules/metrics.ts";
import type { SQL } from "bun";
import { ENTITY_KINDS, POLICIES, type EntityKind } from "../../lifecycle/policy.ts";
import type { LedgerReads, LookupKind, RecentFilter } from "../reads.ts";
import type { AdminEventRow, BranchRow, CallbackRow, DeliveryRow, EntityRow, LegRow, RecentRow, TransitionRow, WaitState } from "../rows.ts";
import { idColumn, longestSharedPrefix, mergeRecent, neighboursOfManyStatement, neighboursStatement, sharedPrefixLengthsOf, recentKinds, recentStatement, waitStateOf, waitStateStatement, type ViewStatement } from "../rules/views.ts";
import { PG_DIALECT, PG_VIEWS } from "./dialect.ts";
import * as legStore from "./legs.ts";
import { num, transitionRow } from "./row-numbers.ts";

/**
 * The next key after every string starting with `prefix`, for index range scans. Id columns compare
 * bytewise (COLLATE "C", migration 0004_ids_bytewise), so U+10FFFF — the highest code point, the highest UTF-8 bytes
 * an id can start with after the prefix — bounds them all.
 */
const upperBound = (prefix: string) => prefix + "\u{10FFFF}";

type Row = Record<string, unknown>;
const isEntityKind = (kind: LookupKind): kind is EntityKind => (ENTITY_KINDS as readonly string[]).includes(kind);
const str = (value: unknown): string | null => (value as string | null | undefined) ?? null;

export class PgReads implements LedgerReads {
  /**
   * The wait state the last call, an exists() of an entity, read along: `li wait ID` looks its target
   * up and checks it at once, each a round trip to the server, so the lookup reads the state too and
   * the check right after takes it. Any other read forgets it: a state is only as fresh as the call
   * just before.
   */
  private lookedUp: { kind: EntityKind; id: string; state: WaitState } | null = null;

  private scheduleStatements: ScheduleStatements | undefined;
  private metricsStatements: MetricsStatements | undefined;

  /** `sql` gives the pool (connected on first use) and maps a failure to the ledger error it stands for. */
  constructor(private readonly run: <T>(fn: (sql: SQL) => Promise<T>) => Promise<T>) {}

  // Loaded when first used (li queue, li ui, /metrics), not on every read command's start-up (sqlite/reads.ts).
  get schedule(): ScheduleStatements {
    if (this.scheduleStatements === undefined) {
      const { ScheduleStatements } = require("../rules/schedule.ts") as typeof import("../rules/schedule.ts");
      const { scheduleRunner } = require("./schedule.ts") as typeof import("./schedule.ts");
      this.scheduleStatements = new ScheduleStatements(scheduleRunner(this.run, false));
    }
    return this.scheduleStatements;
  }

  get metrics(): MetricsStatements {
    if (this.metricsStatements === undefined) {
      const { MetricsStatements } = require("../rules/metrics.ts") as typeof import("../rules/metrics.ts");
      const { scheduleRunner } = require("./schedule.ts") as typeof import("./schedule.ts");
      this.metricsStatements = new MetricsStatements(scheduleRunner(this.run, false), PG_DIALECT);
    }
    return this.metricsStatements;
  }

  /** Every read goes through here: it forgets what the last lookup read along. */
  private read<T>(fn: (sql: SQL) => Promise<T>): Promise<T> {
    this.lookedUp = null;
    return this.run(fn);
  }

  private query<T = Row>(text: string, params: unknown[] = []): Promise<T[]> {
    return this.read(async (sql): Promise<T[]> => [...(await sql.unsafe(text, params))]);
  }

  private statement<T = Row>(built: ViewStatement): Promise<T[]> {
    return this.query<T>(built.sql, built.params);
  }

  async exists(kind: LookupKind, id: string): Promise<boolean> {
    if (isEntityKind(kind)) {
      const [row] = await this.statement(waitStateStatement(PG_VIEWS, kind, id));
      if (row) this.lookedUp = { kind, id, state: waitStateOf(row, num) };
      return row !== undefined;
    }
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
    const looked = this.lookedUp;
    if (looked && looked.kind === kind && looked.id === id) {
      this.lookedUp = null;
      return looked.state;
    }
    // The target and the session behind it in one round trip.
    const [row] = await this.statement(waitStateStatement(PG_VIEWS, kind, id));
    return row ? waitStateOf(row, num) : null;
  }

  /** The newest seq: assigned under a lock held to commit (backend.ts), so it grows with every committed status write. */
  async changeCounter(): Promise<number> {
    const [row] = await this.query("SELECT COALESCE(MAX(seq), 0) AS seq FROM status_transitions");
    return num(row?.seq) ?? 0;
  }

  async sharedPrefixLength(id: string): Promise<number> {
    // Both neighbours of `id` in every id index, in one round trip.
    const [row] = await this.statement(neighboursStatement(PG_VIEWS, id));
    return longestSharedPrefix(id, Object.values(row ?? {}));
  }

  async sharedPrefixLengths(ids: readonly string[]): Promise<Map<string, number>> {
    return sharedPrefixLengthsOf(ids, ids.length === 0 ? [] : await this.statement(neighboursOfManyStatement(PG_VIEWS, ids)));
  }

  async listRecent(filter: RecentFilter): Promise<RecentRow[]> {
    const perKind = await Promise.all(
      recentKinds(filter).map(async (kind) => (await this.statement(recentStatement(PG_VIEWS, kind, filter))).map((r) => ({ ...(r as unknown as RecentRow), leg_count: num(r.leg_count) }))),
    );
    return mergeRecent(perKind, filter.limit);
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
    // The id breaks a tie of timestamps, compared bytewise as on SQLite whatever the database's collation.
    return this.query<AdminEventRow>('SELECT * FROM admin_events WHERE entity_type = $1 AND entity_id = $2 ORDER BY created_at, id COLLATE "C"', [kind, id]);
  }

  legsOf(sessionId: string): Promise<LegRow[]> {
    return this.read((sql) => legStore.listLegs(sql, sessionId));
  }

  branchesOf(sessionId: string): Promise<BranchRow[]> {
    return this.read((sql) => legStore.listBranches(sql, sessionId));
  }
}
