// The rules of the views and of waiting (SPEC §11, §13), written once for every backend: which tables an
// id is looked up in, the shared-prefix rule, the `li ls` query of one kind and the merge of the kinds,
// and the session behind a wait target. Each backend runs these statements through its dialect
// (placeholders, typed NULLs) and keeps only what its collation or driver forces.
// No imports beyond the policy registry: `li wait`'s cold path loads it.

import { ENTITY_KINDS, POLICIES, type EntityKind } from "../../lifecycle/policy.ts";
import type { LookupKind, RecentFilter } from "../reads.ts";
import type { RecentRow, WaitState } from "../rows.ts";

/** What the statements below leave to the backend. */
export interface ViewDialect {
  /** The placeholder of the statement's `position`-th parameter (1-based); a position may be used twice. */
  placeholder(position: number): string;
  /** A NULL of `type` (PostgreSQL types every column of a result; SQLite need not). */
  typedNull(type: "real" | "integer" | "text"): string;
  /** The LIKE that ignores the case of ASCII letters (SQLite's LIKE is; PostgreSQL's ILIKE). */
  caselessLike: "LIKE" | "ILIKE";
  /**
   * An id column as a reference column holding it compares: on PostgreSQL ids are COLLATE "C" and the
   * columns that refer to them (legs.session_id, branches.session_id…) are not, and a comparison of the
   * two cannot use the reference column's index (a scan of every leg for each row listed).
   */
  asReference(idColumn: string): string;
  /** The rows of an id list parameter (`placeholder`) as a FROM item, and each row's id as an expression compared bytewise with id columns. */
  idRows(placeholder: string): { from: string; id: string };
  /** An id list as that parameter's value. */
  idListValue(ids: readonly string[]): unknown;
}

export interface ViewStatement {
  sql: string;
  params: unknown[];
}

/** Table and id column of every kind an id can be looked up in (branch: branches.id; run: legs.run_id). */
export function idColumn(kind: LookupKind): { table: string; column: string } {
  if (kind === "branch") return { table: "branches", column: "id" };
  if (kind === "run") return { table: "legs", column: "run_id" };
  return { table: POLICIES[kind].table, column: "id" };
}

/** Every kind an id can be typed as. */
export const LOOKUP_KINDS: readonly LookupKind[] = [...ENTITY_KINDS, "branch", "run"];

/** Kinds whose tables carry started_at/ended_at (shows and teams do not). */
const TIMED: ReadonlySet<EntityKind> = new Set(["session", "invocation", "play", "schedule_run"]);

/** Both neighbours of the id `id` (an SQL expression) in every id index, as columns before_N / after_N. */
function neighbourColumns(id: string): string[] {
  return LOOKUP_KINDS.flatMap((kind, i) => {
    const { table, column } = idColumn(kind);
    return [
      `(SELECT ${column} FROM ${table} WHERE ${column} < ${id} ORDER BY ${column} DESC LIMIT 1) AS before_${i}`,
      `(SELECT ${column} FROM ${table} WHERE ${column} > ${id} ORDER BY ${column} LIMIT 1) AS after_${i}`,
    ];
  });
}

/**
 * Both neighbours of an id (parameter 1) in every id index, as the columns of one row: the ids that
 * share the longest prefix with it are among them, each found by one index probe.
 */
export function neighboursStatement(d: ViewDialect, id: string): ViewStatement {
  return { sql: `SELECT ${neighbourColumns(d.placeholder(1)).join(",\n  ")}`, params: [id] };
}

/** neighboursStatement for many ids in one statement (a page of `li ls`: one round trip, not one per id); each row's `id` column is its id. */
export function neighboursOfManyStatement(d: ViewDialect, ids: readonly string[]): ViewStatement {
  const { from, id } = d.idRows(d.placeholder(1));
  return { sql: `SELECT ${id} AS id, ${neighbourColumns(id).join(",\n  ")} FROM ${from}`, params: [d.idListValue(ids)] };
}

/** The longest prefix each of `ids` shares with any other id, from neighboursOfManyStatement's rows. */
export function sharedPrefixLengthsOf(ids: readonly string[], rows: readonly Record<string, unknown>[]): Map<string, number> {
  const lengths = new Map<string, number>();
  for (const row of rows) {
    const { id, ...neighbours } = row;
    if (typeof id === "string") lengths.set(id, longestSharedPrefix(id, Object.values(neighbours)));
  }
  for (const id of ids) if (!lengths.has(id)) lengths.set(id, 0);
  return lengths;
}

/** The longest prefix `id` shares with any of `neighbours` (characters, compared exactly). */
export function longestSharedPrefix(id: string, neighbours: Iterable<unknown>): number {
  let longest = 0;
  for (const other of neighbours) {
    if (typeof other !== "string") continue;
    const n = Math.min(id.length, other.length);
    let i = 0;
    while (i < n && id.charCodeAt(i) === other.charCodeAt(i)) i++;
    longest = Math.max(longest, i);
  }
  return longest;
}

/** The kinds `li ls` queries: a status filter skips every kind that has no such status, a host filter every kind but sessions. */
export function recentKinds(filter: RecentFilter): EntityKind[] {
  return filter.kinds.filter((kind) => (filter.status === undefined || POLICIES[kind].statuses.has(filter.status)) && (filter.host === undefined || kind === "session"));
}

/** `text` as a LIKE pattern that finds it anywhere, its `%`, `_` and `\` taken literally (ESCAPE '\'). */
function containsPattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/** One kind's newest rows for `li ls`, with a session's current leg and first branch. */
export function recentStatement(d: ViewDialect, kind: EntityKind, filter: RecentFilter): ViewStatement {
  const t = POLICIES[kind].table;
  const real = d.typedNull("real");
  const text = d.typedNull("text");
  const times = TIMED.has(kind) ? "e.started_at, e.ended_at" : `${real} AS started_at, ${real} AS ended_at`;
  const firstBranch = `(SELECT b.id FROM branches b WHERE b.session_id = ${d.asReference("e.id")} ORDER BY b.created_at, b.id LIMIT 1)`;
  const legs =
    kind === "session"
      ? `(SELECT COUNT(*) FROM legs c WHERE c.session_id = ${d.asReference("e.id")}) AS leg_count, l.started_at AS leg_started_at, l.ended_at AS leg_ended_at, l.command AS leg_command, l.host_id AS leg_host_id, l.host_name AS leg_host_name,
         l.cpu_user_seconds AS leg_cpu_user_seconds, l.cpu_system_seconds AS leg_cpu_system_seconds, l.peak_rss_bytes AS leg_peak_rss_bytes,
         ${firstBranch} AS branch_id
         FROM ${t} e LEFT JOIN legs l ON l.id = e.current_leg_id`
      : `${d.typedNull("integer")} AS leg_count, ${real} AS leg_started_at, ${real} AS leg_ended_at, ${text} AS leg_command, ${text} AS leg_host_id, ${text} AS leg_host_name, ${real} AS leg_cpu_user_seconds, ${real} AS leg_cpu_system_seconds, ${d.typedNull("integer")} AS leg_peak_rss_bytes, ${text} AS branch_id FROM ${t} e`;
  // Only the predicates in use, so the planner can pick the (status, updated_at) or updated_at index
  // (an `?1 IS NULL OR …` form scans every row: 0.25 s for `--status failed` on a million sessions).
  const where: string[] = [];
  const params: unknown[] = [];
  if (filter.status !== undefined) params.push(filter.status), where.push(`e.status = ${d.placeholder(params.length)}`);
  if (filter.since !== undefined) params.push(filter.since), where.push(`e.updated_at >= ${d.placeholder(params.length)}`);
  // Keyset paging: the next page starts after the last row shown, by the index's own order, so a row
  // committed meanwhile (newer: before the first page) never shifts it, and no page re-reads the ones before.
  if (filter.after !== undefined) {
    params.push(filter.after.updatedAt, filter.after.id);
    where.push(`(e.updated_at, e.id) < (${d.placeholder(params.length - 1)}, ${d.placeholder(params.length)})`);
  }
  // Host (sessions only: recentKinds): the session row keeps its current leg's host name and machine (the
  // machine part of a host id, MACHINE:BOOT, names the host across reboots), each with an index in the
  // listing's order. A name and a machine are two indexes: each is walked newest first to the LIMIT in a
  // branch of its own and the two merged below (an OR of both would sort every row of a busy host).
  let hostBranches: [string, string] | null = null;
  if (filter.host !== undefined && kind === "session") {
    params.push(filter.host);
    const p = d.placeholder(params.length);
    const colon = filter.host.indexOf(":");
    if (colon === -1) hostBranches = [`e.host_name = ${p}`, `e.host_machine = ${p}`];
    else {
      // A whole host id: its machine's index, then the leg's own id (one boot of the machine).
      params.push(filter.host.slice(0, colon));
      hostBranches = [`e.host_name = ${p}`, `e.host_machine = ${d.placeholder(params.length)} AND l.host_id = ${p}`];
    }
  }
  // Text: no index can find a substring, so rows are tested in the index's order until the page is full
  // (a text no row holds reads every row of the kind). The command is matched in its stored JSON, the text
  // escaped as JSON escapes it, so a quote or a backslash in it matches itself. The branch is the one listed
  // (the first), probed per row: an EXISTS over any branch PostgreSQL would hash whole once per page.
  if (filter.text !== undefined) {
    const like = d.caselessLike;
    params.push(containsPattern(filter.text));
    const p = d.placeholder(params.length);
    const tests = [`e.id ${like} ${p} ESCAPE '\\'`, `e.status_reason_code ${like} ${p} ESCAPE '\\'`];
    // A scheduled run's command is in its stored request (JSON, with its directory and variables).
    if (kind === "schedule_run") {
      params.push(containsPattern(JSON.stringify(filter.text).slice(1, -1)));
      tests.push(`e.request_json ${like} ${d.placeholder(params.length)} ESCAPE '\\'`);
    }
    if (kind === "session") {
      params.push(containsPattern(JSON.stringify(filter.text).slice(1, -1)));
      tests.push(`${firstBranch} ${like} ${p} ESCAPE '\\'`, `l.command ${like} ${d.placeholder(params.length)} ESCAPE '\\'`);
    }
    where.push(`(${tests.join(" OR ")})`);
  }
  params.push(filter.limit);
  const limit = d.placeholder(params.length);
  const select = (and: readonly string[]) =>
    `SELECT '${kind}' AS kind, e.id, e.status, e.status_reason_code AS reason, e.created_at, e.updated_at, ${times}, ${legs}
       ${where.length + and.length > 0 ? `WHERE ${[...where, ...and].join(" AND ")}` : ""}
       ORDER BY e.updated_at DESC, e.id DESC LIMIT ${limit}`;
  if (hostBranches === null) return { sql: select([]), params };
  // Both branches' rows, each a page at most; a session matching both (its name is its machine) once.
  return {
    sql: `SELECT * FROM (SELECT * FROM (${select([hostBranches[0]])}) by_name UNION SELECT * FROM (${select([hostBranches[1]])}) by_machine) h
       ORDER BY h.updated_at DESC, h.id DESC LIMIT ${limit}`,
    params,
  };
}

/** The kinds' rows as one listing: newest update first, ties by id descending, at most `limit`. */
export function mergeRecent(perKind: readonly (readonly RecentRow[])[], limit: number): RecentRow[] {
  const rows = perKind.flat();
  rows.sort((a, b) => b.updated_at - a.updated_at || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
  return rows.slice(0, limit);
}

/**
 * A wait target (parameter 1: its id) and the session behind it, in one statement: a session itself, a
 * play's session, the newest session of an invocation or of a schedule run's invocation (by
 * sessions_invocation_idx); shows and teams have none. The artifact root is that session's current
 * leg's, else its artifacts_path; the exit code the target's own (plays, schedule runs), else the session's.
 * A schedule run's session is the one its lease's leg linked (else its invocation's newest).
 */
export function waitStateStatement(d: ViewDialect, kind: EntityKind, id: string): ViewStatement {
  const table = POLICIES[kind].table;
  // An id compared with a reference column as that column compares (asReference: an invocation's id, COLLATE
  // "C" on PostgreSQL, against sessions.invocation_id would miss sessions_invocation_idx and read every session).
  const newestOf = (invocation: string) => `(SELECT s.id FROM sessions s WHERE s.invocation_id = ${invocation} ORDER BY s.updated_at DESC, s.id DESC LIMIT 1)`;
  const backing =
    kind === "session"
      ? "e.id"
      : kind === "play"
        ? "e.session_id"
        : kind === "invocation"
          ? newestOf(d.asReference("e.id"))
          : kind === "schedule_run"
            ? `COALESCE(e.session_id, ${newestOf("e.invocation_id")})`
            : d.typedNull("text");
  const own = kind === "play" || kind === "schedule_run" ? "e.exit_code" : d.typedNull("integer");
  // A schedule run is judged by its chain's newest attempt (§19: a retry is a new run chained to the last):
  // the run whose chain_parent_id links lead back to the id waited on, furthest down.
  const chain =
    kind === "schedule_run"
      ? `WITH RECURSIVE chain(id, depth) AS (SELECT r.id, 0 FROM schedule_runs r WHERE r.id = ${d.placeholder(1)} UNION ALL SELECT c.id, chain.depth + 1 FROM schedule_runs c JOIN chain ON c.chain_parent_id = ${d.asReference("chain.id")} WHERE chain.depth < 10000) `
      : "";
  const target = kind === "schedule_run" ? "(SELECT id FROM chain ORDER BY depth DESC LIMIT 1)" : d.placeholder(1);
  return {
    sql: `${chain}SELECT e.status, e.status_reason_code AS reason, ${own} AS own_exit, COALESCE(l.artifact_root, b.artifacts_path) AS artifact_dir, b.exit_code AS backing_exit
       FROM ${table} e LEFT JOIN sessions b ON b.id = ${backing} LEFT JOIN legs l ON l.id = b.current_leg_id
       WHERE e.id = ${target}`,
    params: [id],
  };
}

/** The wait projection of waitStateStatement's row; `num` converts what a driver returns as text. */
export function waitStateOf(row: Record<string, unknown>, num: (value: unknown) => number | null = (v) => (v as number | null | undefined) ?? null): WaitState {
  const text = (value: unknown) => (value as string | null | undefined) ?? null;
  // A leg whose run directory could not be written has no artifact root (NO_ARTIFACT_ROOT): none.
  return { status: text(row.status), reason: text(row.reason), artifactDir: text(row.artifact_dir) || null, exitCode: num(row.own_exit) ?? num(row.backing_exit) };
}
