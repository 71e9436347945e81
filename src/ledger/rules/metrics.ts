// The counts behind /metrics and li watch --metrics-file, written once for every backend over the same
// runner the schedule statements use. Each is one aggregate statement: a scrape costs a few scans, and
// never a row per entity. Counts are CAST to integer so PostgreSQL's bigint arrives as a number.

import type { ScheduleRunner } from "./schedule.ts";
import { owedCountStatement, type OwedDialect } from "./owed.ts";
import { plainLiveConsumer } from "../../lifecycle/consumer-prefixes.ts";

/** Upper bounds (seconds) of the leg duration histogram's buckets; +Inf is implied. */
export const DURATION_BUCKETS = [1, 5, 15, 60, 300, 900, 3600, 14400, 86400] as const;

export interface StatusCount {
  kind: string;
  status: string;
  reason: string | null;
  n: number;
}

export interface DurationHistogram {
  /** Cumulative counts, one per DURATION_BUCKETS bound. */
  buckets: number[];
  count: number;
  sum: number;
}

export interface MetricsStore {
  /** Sessions and scheduled runs by status and reason code. */
  statusCounts(): Promise<StatusCount[]>;
  /** Ended legs' durations. */
  legDurations(): Promise<DurationHistogram>;
  /** Every delivery owed, started or not, on every host: the sum of `li events owed --consumer` over the live consumers. */
  deliveriesOwed(): Promise<number>;
  /** Deliveries by state (claimed, retry, acked, dead). */
  deliveryStates(): Promise<{ state: string; n: number }[]>;
  /** History rows that record a reaped phantom (reason session.phantom.*). */
  phantomsReaped(): Promise<number>;
  /** The newest deliveries still owed (claimed, retry) or dead, with the entity whose event they carry. */
  unsettledDeliveries(limit: number): Promise<UnsettledDelivery[]>;
}

export interface UnsettledDelivery {
  transition_id: string;
  consumer: string;
  state: string;
  attempts: number;
  last_error: string | null;
  next_attempt_at: number | null;
  updated_at: number;
  entity_type: string;
  entity_id: string;
  status: string;
}

export class MetricsStatements implements MetricsStore {
  constructor(
    private readonly db: Pick<ScheduleRunner, "all">,
    private readonly dialect: OwedDialect,
  ) {}

  async statusCounts(): Promise<StatusCount[]> {
    const rows = await this.db.all<StatusCount>(
      "SELECT 'session' AS kind, status, status_reason_code AS reason, CAST(COUNT(*) AS integer) AS n FROM sessions GROUP BY status, status_reason_code " +
        "UNION ALL SELECT 'schedule_run' AS kind, status, status_reason_code AS reason, CAST(COUNT(*) AS integer) AS n FROM schedule_runs GROUP BY status, status_reason_code",
      [],
    );
    return rows.map((r) => ({ ...r, n: Number(r.n) }));
  }

  async legDurations(): Promise<DurationHistogram> {
    const bucketColumns = DURATION_BUCKETS.map((le, i) => `CAST(SUM(CASE WHEN ended_at - started_at <= ${le} THEN 1 ELSE 0 END) AS integer) AS b${i}`).join(", ");
    const [row] = await this.db.all<Record<string, unknown>>(
      `SELECT ${bucketColumns}, CAST(COUNT(*) AS integer) AS n, COALESCE(SUM(ended_at - started_at), 0) AS total FROM legs WHERE ended_at IS NOT NULL`,
      [],
    );
    return { buckets: DURATION_BUCKETS.map((_, i) => Number(row?.[`b${i}`] ?? 0)), count: Number(row?.n ?? 0), sum: Number(row?.total ?? 0) };
  }

  async deliveriesOwed(): Promise<number> {
    const [row] = await this.db.all<{ n: number }>(owedCountStatement(this.dialect, plainLiveConsumer("k.name", "k.retired_at")), []);
    return Number(row?.n ?? 0);
  }

  async deliveryStates(): Promise<{ state: string; n: number }[]> {
    const rows = await this.db.all<{ state: string; n: number }>("SELECT state, CAST(COUNT(*) AS integer) AS n FROM terminal_deliveries GROUP BY state", []);
    return rows.map((r) => ({ state: r.state, n: Number(r.n) }));
  }

  async phantomsReaped(): Promise<number> {
    const [row] = await this.db.all<{ n: number }>("SELECT CAST(COUNT(*) AS integer) AS n FROM status_transitions WHERE reason_code LIKE 'session.phantom.%'", []);
    return Number(row?.n ?? 0);
  }

  async unsettledDeliveries(limit: number): Promise<UnsettledDelivery[]> {
    const rows = await this.db.all<UnsettledDelivery>(
      "SELECT d.transition_id, d.consumer, d.state, d.attempts, d.last_error, d.next_attempt_at, d.updated_at, t.entity_type, t.entity_id, t.status " +
        "FROM terminal_deliveries d JOIN status_transitions t ON t.id = d.transition_id WHERE d.state IN ('claimed', 'retry', 'dead') ORDER BY d.updated_at DESC LIMIT ?",
      [limit],
    );
    return rows.map((r) => ({ ...r, attempts: Number(r.attempts), updated_at: Number(r.updated_at), next_attempt_at: r.next_attempt_at === null ? null : Number(r.next_attempt_at) }));
  }
}
