// The owed-delivery rule (SPEC §9.2–9.6), written once for every backend: which terminal events each
// handler or consumer is still owed. The delivery engine's owed query, the prune's owed check and a
// plain consumer's backlog are built here as SQL over a small dialect object (JSON-array membership, id
// lists, placeholders, SQLite's planner hints); the adapters only run what this module builds.

/** What differs between the SQL of two backends, for the statements this module builds. */
export interface OwedDialect {
  /** The placeholder of a named parameter; `position` is its 1-based order of first use in the statement. */
  placeholder(name: string, position: number): string;
  /** `value` is one of the strings of the JSON array held (as text) in `column`. */
  jsonArrayHas(column: string, value: string): string;
  /** `column` is one of the ids of the list parameter at `placeholder`. */
  inList(column: string, placeholder: string): string;
  /** An id list as the list parameter's value. */
  listValue(ids: readonly string[]): unknown;
  /**
   * The join that brings the delivery row (if any) of event `transition` for consumer `consumer` as `d`,
   * with its state, claimed_until, next_attempt_at and attempts: one probe of the primary key per pair.
   */
  deliveryJoin(transition: string, consumer: string): string;
  /**
   * The join that brings, for each row of consumer `k`, the terminal events above its watermark as `t`:
   * one range of (terminal_event, seq) per standing handler, whatever the planner guesses of its size.
   */
  eventsAboveWatermark(k: string): string;
  /** Planner hints for a planner without statistics (SQLite); empty where the planner has them. */
  hints: {
    /** The join keyword that keeps the written join order. */
    orderedJoin: string;
    /** After a `status_transitions` alias: reach it through (entity_type, entity_id). */
    byEntity: string;
    /** An expression kept off every index (SQLite's unary `+`). */
    unindexed(expression: string): string;
  };
}

/** A statement and its parameter values, by name (`order`: the names in placeholder order). */
export interface BuiltStatement {
  sql: string;
  values: Record<string, unknown>;
  order: string[];
}

/** Placeholders of one statement, each name numbered on its first use. */
class Parameters {
  readonly values: Record<string, unknown> = {};
  readonly order: string[] = [];
  constructor(private readonly dialect: OwedDialect) {}

  ref(name: string, value: unknown): string {
    if (!(name in this.values)) {
      this.values[name] = value;
      this.order.push(name);
    }
    return this.dialect.placeholder(name, this.order.indexOf(name) + 1);
  }

  built(sql: string): BuiltStatement {
    return { sql, values: this.values, order: this.order };
  }
}

/**
 * A delivery row (alias `d`) free to take at `now`: a claim that expired (its claimer died) or a retry
 * that is due. A live claim is not, so a dead watcher's claims never fill a page of owed rows.
 */
export function deliveryTakeable(d: string, now: string): string {
  return `((${d}.state = 'claimed' AND ${d}.claimed_until <= ${now}) OR (${d}.state = 'retry' AND COALESCE(${d}.next_attempt_at, 0) <= ${now}))`;
}

/** Not settled and free to take: never claimed (no row), or takeable. */
const deliveryOpen = (d: string, now: string) => `(${d}.state IS NULL OR ${deliveryTakeable(d, now)})`;

/** Event `t` is settled (acknowledged or dead) for consumer `k`: a failed or claimed delivery is still owed. */
const notSettled = (t: string, consumer: string) =>
  `NOT EXISTS (SELECT 1 FROM terminal_deliveries d WHERE d.transition_id = ${t}.id AND d.consumer = ${consumer} AND d.state IN ('acked', 'dead'))`;

/** The first terminal event of the registration's session above its watermark: nothing lower is owed to it. */
function firstAboveWatermark(dialect: OwedDialect): string {
  const plus = dialect.hints.unindexed;
  return `NOT EXISTS (SELECT 1 FROM status_transitions p ${dialect.hints.byEntity}
    WHERE p.entity_type = 'session' AND p.entity_id = c.session_id AND ${plus("p.terminal_event")} = 1 AND p.seq > k.watermark AND p.seq < t.seq)`;
}

/** A standing handler's filter (null: every kind, every id) matches event `t`. */
const filterMatches = (dialect: OwedDialect) =>
  `(c.filter_kinds IS NULL OR ${dialect.jsonArrayHas("c.filter_kinds", "t.entity_type")})
  AND (c.filter_ids IS NULL OR ${dialect.jsonArrayHas("c.filter_ids", "t.entity_id")})`;

/** A live registration of `scope`. */
const liveCallback = (scope: "leg" | "standing") => `c.scope = '${scope}' AND c.enabled = 1 AND c.retired_at IS NULL`;

/** A leg registration's notice is the event of its own leg (an event naming no leg: any). */
const ownLeg = "COALESCE(t.leg_id, c.leg_id) = c.leg_id";

export interface OwedHandlersFilter {
  hostId?: string;
  uid?: number;
  transitionId?: string;
  consumer?: string;
}

const OWED_COLUMNS = `t.id AS transition_id, t.seq, t.entity_type, t.entity_id, c.consumer, c.id AS callback_id, c.scope, c.argv, c.leg_id,
  d.state, d.claimed_until, d.attempts`;

/**
 * The (handler, event) pairs owed and open at `now`, oldest seq first, at most `limit`. A leg
 * registration is owed the first terminal event of its session above its watermark (one leg, one
 * notice), and only while its leg is the event's leg; a standing handler every terminal event above
 * its watermark that its filter matches.
 */
export function owedToHandlersStatement(dialect: OwedDialect, filter: OwedHandlersFilter, now: number, limit: number): BuiltStatement {
  const p = new Parameters(dialect);
  const open = deliveryOpen("d", p.ref("now", now));
  const conditions: string[] = [];
  if (filter.hostId !== undefined) conditions.push(`AND c.host_id = ${p.ref("host", filter.hostId)}`);
  if (filter.uid !== undefined) conditions.push(`AND c.uid = ${p.ref("uid", filter.uid)}`);
  if (filter.transitionId !== undefined) conditions.push(`AND t.id = ${p.ref("tid", filter.transitionId)}`);
  if (filter.consumer !== undefined) conditions.push(`AND c.consumer = ${p.ref("consumer", filter.consumer)}`);
  // A pass over every handler (no event named) starts from the live registrations and probes each
  // session's history by index, instead of scanning every terminal event.
  const { legs, standing } = owedToHandlersParts(dialect, open, conditions.join(" "), filter.transitionId === undefined);
  return p.built(`SELECT * FROM (${legs} UNION ALL ${standing}) owed ORDER BY seq, consumer LIMIT ${p.ref("limit", limit)}`);
}

/** The two parts of owedToHandlersStatement (leg registrations, standing handlers), each row a pair whose delivery row `d` meets `open`. */
function owedToHandlersParts(dialect: OwedDialect, open: string, where: string, fromCallbacks: boolean): { legs: string; standing: string } {
  const join = fromCallbacks ? dialect.hints.orderedJoin : "JOIN";
  const legs = `SELECT ${OWED_COLUMNS}
FROM terminal_callbacks c
${join} consumers k ON k.name = c.consumer AND k.retired_at IS NULL
${join} status_transitions t ${fromCallbacks ? dialect.hints.byEntity : ""} ON t.entity_type = 'session' AND t.entity_id = c.session_id AND t.terminal_event = 1 AND t.seq > k.watermark
${dialect.deliveryJoin("t.id", "c.consumer")}
WHERE ${liveCallback("leg")} AND ${open} ${where}
  AND ${firstAboveWatermark(dialect)}
  AND ${ownLeg}`;
  const standing = `SELECT ${OWED_COLUMNS}
FROM terminal_callbacks c
JOIN consumers k ON k.name = c.consumer AND k.retired_at IS NULL
${dialect.eventsAboveWatermark("k")}
${dialect.deliveryJoin("t.id", "c.consumer")}
WHERE ${liveCallback("standing")} AND ${open} ${where}
  AND ${filterMatches(dialect)}`;
  return { legs, standing };
}

export interface NextTakeableQuery {
  hostId: string;
  uid?: number;
  anyClaim: boolean;
  /** Only times later than this (the ledger's now). */
  after: number;
}

/**
 * When the next delivery held back from `owedToHandlersStatement` becomes free to take, as one number (null:
 * none): the earliest retry due or claim expiring among the live handlers of host `hostId` (and `uid`), and
 * with `anyClaim` the earliest claim expiring on any host (the elected watcher buries exhausted ones). A
 * watcher with a long safety poll sleeps until then, not a whole poll (§14 "Many hosts"). Reads
 * terminal_deliveries_state_idx: only unsettled rows. Only times after `after` (the pass's now): a row
 * already due that the pass did not take (no longer owed: its consumer moved on) is no reason to wake.
 */
export function nextTakeableStatement(dialect: OwedDialect, filter: NextTakeableQuery): BuiltStatement {
  const p = new Parameters(dialect);
  const after = p.ref("after", filter.after);
  const ofUid = filter.uid === undefined ? "" : ` AND c.uid = ${p.ref("uid", filter.uid)}`;
  const host = `SELECT CASE WHEN d.state = 'claimed' THEN d.claimed_until ELSE COALESCE(d.next_attempt_at, 0) END AS t
FROM terminal_deliveries d JOIN terminal_callbacks c ON c.consumer = d.consumer
WHERE d.state IN ('claimed', 'retry') AND c.host_id = ${p.ref("host", filter.hostId)}${ofUid} AND c.enabled = 1 AND c.retired_at IS NULL`;
  const claims = filter.anyClaim ? `\nUNION ALL SELECT d.claimed_until AS t FROM terminal_deliveries d WHERE d.state = 'claimed'` : "";
  return p.built(`SELECT MIN(t) AS t FROM (${host}${claims}) due WHERE t > ${after}`);
}

/**
 * Every delivery owed in the ledger, on every host, as one count without parameters: the (handler, event)
 * pairs the delivery engine owes whatever their claim (never started, claimed, waiting to retry: what
 * `li events owed --consumer` lists for a handler's consumer, the engine's rule judged at the end of
 * time), plus the events each live plain consumer has not acknowledged (owedToConsumerStatement's rule).
 * The sum of `li events owed --consumer NAME` over every live consumer. `plainLive` is the condition of
 * consumers_plain_live_idx on `k` (schema-checks.ts).
 */
export function owedCountStatement(dialect: OwedDialect, plainLive: string): string {
  const unsettled = "(d.state IS NULL OR d.state IN ('claimed', 'retry'))";
  const { legs, standing } = owedToHandlersParts(dialect, unsettled, "", true);
  const plain = `SELECT t.id FROM consumers k
JOIN status_transitions t ON t.terminal_event = 1 AND t.seq > k.watermark
WHERE ${plainLive} AND ${notSettled("t", "k.name")}`;
  return `SELECT CAST((SELECT COUNT(*) FROM (${legs} UNION ALL ${standing}) handlers) + (SELECT COUNT(*) FROM (${plain}) plain) AS integer) AS n`;
}

/**
 * Whether host `hostId` has any live handler registration at all: a necessary condition for anything
 * being owed to its handlers (owedToHandlersStatement asks for a live registration of that host in
 * both parts). Most legs' pushes find none, and this indexed probe (terminal_callbacks_live_idx) is far
 * cheaper to prepare in a fresh process than the owed query it spares.
 */
export function liveHandlerOnHostStatement(dialect: OwedDialect, hostId: string, uid?: number): BuiltStatement {
  const p = new Parameters(dialect);
  const ofUid = uid === undefined ? "" : ` AND c.uid = ${p.ref("uid", uid)}`;
  return p.built(`SELECT 1 AS live FROM terminal_callbacks c
WHERE c.scope IN ('leg', 'standing') AND c.host_id = ${p.ref("host", hostId)}${ofUid} AND c.retired_at IS NULL AND c.enabled = 1 LIMIT 1`);
}

/** Terminal events a plain consumer has not settled, above its watermark, oldest seq first. */
export function owedToConsumerStatement(dialect: OwedDialect, name: string, limit: number): BuiltStatement {
  const p = new Parameters(dialect);
  const consumer = p.ref("name", name);
  // The watermark first (NULL for a missing or retired consumer: nothing is owed), so the events are one
  // range of (terminal_event, seq) from it, not a walk of history joined to the consumer row.
  return p.built(`SELECT t.* FROM status_transitions t
WHERE t.terminal_event = 1 AND t.seq > (SELECT k.watermark FROM consumers k WHERE k.name = ${consumer} AND k.retired_at IS NULL)
  AND ${notSettled("t", consumer)}
ORDER BY t.seq LIMIT ${p.ref("limit", limit)}`);
}

/**
 * Sessions of a prune batch with a terminal event some registered consumer is still owed (SPEC §9.6):
 * not settled, above the consumer's watermark, and — for handlers — matching the handler as the
 * delivery engine matches it (owedToHandlersStatement). One part per kind of consumer, each reaching its
 * consumers by index: the batch's own registrations by session, the live standing handlers, the plain
 * consumers (consumers_plain_live_idx, whose condition `plainLive` states). SQLite's `+` keeps its
 * planner from walking every terminal event above a watermark: each part reaches its events by
 * (entity_type, entity_id). UNION ALL: a session may appear more than once; the caller keeps a set.
 */
export function owedSessionsStatement(dialect: OwedDialect, sessionIds: readonly string[], plainLive: string): BuiltStatement {
  const p = new Parameters(dialect);
  const batch = p.ref("batch", dialect.listValue(sessionIds));
  const plus = dialect.hints.unindexed;
  const terminal = `${plus("t.terminal_event")} = 1`;
  return p.built(`
SELECT t.entity_id AS id
FROM terminal_callbacks c
JOIN consumers k ON k.name = c.consumer AND k.retired_at IS NULL
JOIN status_transitions t ON t.entity_type = 'session' AND t.entity_id = c.session_id AND ${terminal} AND t.seq > k.watermark
WHERE ${dialect.inList("c.session_id", batch)} AND ${plus("c.scope")} = 'leg' AND c.enabled = 1 AND c.retired_at IS NULL
  AND ${notSettled("t", "k.name")}
  AND ${firstAboveWatermark({ ...dialect, hints: { ...dialect.hints, byEntity: "" } })}
  AND ${ownLeg}
UNION ALL
SELECT t.entity_id AS id
FROM terminal_callbacks c
JOIN consumers k ON k.name = c.consumer AND k.retired_at IS NULL
JOIN status_transitions t ON t.entity_type = 'session' AND ${dialect.inList("t.entity_id", batch)} AND ${terminal} AND t.seq > k.watermark
WHERE ${liveCallback("standing")}
  AND ${filterMatches(dialect)}
  AND ${notSettled("t", "k.name")}
UNION ALL
SELECT t.entity_id AS id
FROM consumers k
JOIN status_transitions t ON t.entity_type = 'session' AND ${dialect.inList("t.entity_id", batch)} AND ${terminal} AND t.seq > k.watermark
WHERE ${plainLive}
  AND NOT EXISTS (SELECT 1 FROM terminal_callbacks c WHERE c.consumer = k.name)
  AND ${notSettled("t", "k.name")}`);
}
