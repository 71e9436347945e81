// PostgreSQL statements of the sweeps (SPEC §12), the twin of src/ledger/sqlite/sweeps.ts: running-session
// reads, the in-lock re-check and the prune batch. Every function takes the `sql` it runs on: the pool for
// the reads, the transaction's handle for the re-check and the batch (both are Bun's SQL).

import type { SQL } from "bun";
import type { LegDirs, RunningSession, SweepGuardRow } from "../rows.ts";
import { plainLiveConsumer } from "../schema-checks.ts";
import type { PruneStatementResult } from "../sweep-store.ts";
import { owedSessionsStatement } from "../rules/owed.ts";
import { SOFT_REFERENCES, type PruneSqlStatement } from "../rules/prune.ts";
import { SWEEP_SESSION_HEAD, sweepLegsWhere, withSweepLegs, type SweepSessionHead } from "../rules/sweep-sessions.ts";
import { PG_DIALECT } from "./dialect.ts";
import { legRow } from "./row-numbers.ts";

/** Id lists travel as one array parameter (`= ANY($1::text[])`), so one statement serves every batch size. */
const IN_BATCH = "= ANY($1::text[])";

async function attachLegs(sql: SQL, heads: SweepSessionHead[]): Promise<RunningSession[]> {
  if (heads.length === 0) return [];
  const legs: Record<string, unknown>[] = await sql.unsafe(
    `SELECT g.* FROM legs g JOIN sessions s ON s.id = g.session_id
     WHERE ${sweepLegsWhere(`g.session_id ${IN_BATCH}`)}
     ORDER BY g.session_id, g.seq`,
    [heads.map((h) => h.id)],
  );
  return withSweepLegs(heads, legs.map(legRow));
}

export async function listRunningSessions(sql: SQL, options: { afterId?: string | null; limit: number }): Promise<RunningSession[]> {
  const heads: SweepSessionHead[] = await sql.unsafe(`SELECT ${SWEEP_SESSION_HEAD} FROM sessions s WHERE s.status = 'running' AND s.id > $1 ORDER BY s.id LIMIT $2`, [
    options.afterId ?? "",
    options.limit,
  ]);
  return attachLegs(sql, [...heads]);
}

export async function getSweepSession(sql: SQL, id: string): Promise<RunningSession | null> {
  const [head] = (await sql.unsafe(`SELECT ${SWEEP_SESSION_HEAD} FROM sessions s WHERE s.id = $1`, [id])) as SweepSessionHead[];
  return head ? (await attachLegs(sql, [head]))[0]! : null;
}

export async function listPruneCandidates(sql: SQL, options: { terminalStatuses: readonly string[]; cutoff: number; afterId: string | null; limit: number }): Promise<string[]> {
  // Walks the primary key from the last batch on; the status and age are a filter on each row.
  const rows: { id: string }[] = await sql.unsafe(`SELECT id FROM sessions WHERE status = ANY($1::text[]) AND updated_at < $2 AND id > $3 ORDER BY id LIMIT $4`, [
    [...options.terminalStatuses],
    options.cutoff,
    options.afterId ?? "",
    options.limit,
  ]);
  return rows.map((r) => r.id);
}

export async function countPruneCandidates(sql: SQL, options: { terminalStatuses: readonly string[]; cutoff: number }): Promise<number> {
  const [row] = await sql.unsafe(`SELECT COUNT(*) AS n FROM sessions WHERE status = ANY($1::text[]) AND updated_at < $2`, [[...options.terminalStatuses], options.cutoff]);
  // COUNT is a bigint, which Bun hands back as a string.
  return Number(row?.n ?? 0);
}

export async function legsUsingDirectory(sql: SQL, dir: string): Promise<LegDirs[]> {
  const inside = dir.endsWith("/") ? dir : `${dir}/`;
  // Everything inside `dir/` sorts from "dir/" up to "dir0" ('0' follows '/') byte by byte: the two
  // columns compare bytewise (COLLATE "C", migration 0004), so this is a range on each root's index.
  const after = `${inside.slice(0, -1)}0`;
  return sql.unsafe(
    `SELECT id, session_id, state_root, artifact_root FROM legs
     WHERE state_root = $1 OR (state_root >= $2 AND state_root < $3) OR artifact_root = $1 OR (artifact_root >= $2 AND artifact_root < $3)`,
    [dir, inside, after],
  );
}

export async function readSweepGuard(sql: SQL, sessionId: string): Promise<SweepGuardRow | null> {
  const [row] = (await sql.unsafe(`SELECT s.status, s.current_leg_id, g.heartbeat_at FROM sessions s LEFT JOIN legs g ON g.id = s.current_leg_id WHERE s.id = $1`, [
    sessionId,
  ])) as { status: string; current_leg_id: string | null; heartbeat_at: number | null }[];
  return row ? { status: row.status, currentLegId: row.current_leg_id, heartbeatAt: row.heartbeat_at } : null;
}

export async function legsOfSessions(sql: SQL, sessionIds: readonly string[]): Promise<LegDirs[]> {
  return sql.unsafe(`SELECT id, session_id, state_root, artifact_root FROM legs WHERE session_id ${IN_BATCH}`, [[...sessionIds]]);
}

const SESSION_TRANSITIONS = `SELECT id FROM status_transitions WHERE entity_type = 'session' AND entity_id ${IN_BATCH}`;
const SESSION_REGISTRATION_CONSUMERS = `SELECT consumer FROM terminal_callbacks WHERE scope = 'leg' AND session_id ${IN_BATCH}`;
/** Still terminal and old ($2 the terminal statuses, $3 the cutoff). */
const STILL_PRUNABLE = `status = ANY($2::text[]) AND updated_at < $3`;

/** The SQL of each statement; every one takes the batch's ids as its first parameter (some take more). */
const STATEMENTS: Record<PruneSqlStatement, string> = {
  // Locks every candidate row in one order (id), changing nothing: a guarded write on a candidate waits
  // for the batch's commit, and two batches never lock each other's rows in opposite orders (§12.5).
  lock_candidates: `SELECT id FROM sessions WHERE id ${IN_BATCH} ORDER BY id FOR UPDATE`,
  // Its own snapshot (READ COMMITTED): a resume that committed before the lock was granted is seen here.
  reread_status: `SELECT id FROM sessions WHERE id ${IN_BATCH} AND ${STILL_PRUNABLE}`,
  find_owed: "", // built with the batch, see owedSessionsStatement
  delete_deliveries: `DELETE FROM terminal_deliveries WHERE transition_id IN (${SESSION_TRANSITIONS})`,
  delete_registration_consumers: `DELETE FROM consumers WHERE name IN (${SESSION_REGISTRATION_CONSUMERS})`,
  delete_registrations: `DELETE FROM terminal_callbacks WHERE session_id ${IN_BATCH}`,
  delete_messages: `DELETE FROM messages WHERE session_id ${IN_BATCH}`,
  delete_legs: `DELETE FROM legs WHERE session_id ${IN_BATCH}`,
  delete_branches: `DELETE FROM branches WHERE session_id ${IN_BATCH}`,
  delete_transitions: `DELETE FROM status_transitions WHERE entity_type = 'session' AND entity_id ${IN_BATCH}`,
  null_soft_references: "", // several statements, see below
  // Still terminal and old: were the lock ever not held, a reopened session survives, and the re-read
  // after it abandons the whole batch rather than leave it stripped of its history.
  delete_sessions: `DELETE FROM sessions WHERE id ${IN_BATCH} AND ${STILL_PRUNABLE}`,
  reread_survivors: `SELECT id FROM sessions WHERE id ${IN_BATCH}`,
};

/** One statement of a prune batch, inside the batch's transaction (`sql` is its handle). */
export async function pruneStatement(
  sql: SQL,
  statement: PruneSqlStatement,
  sessionIds: readonly string[],
  options: { terminalStatuses: readonly string[]; cutoff: number },
): Promise<PruneStatementResult> {
  const batch = [...sessionIds];
  const changed = async (text: string, params: unknown[] = [batch]) => (await sql.unsafe(text, params)).count as number;
  const selected = async (text: string, params: unknown[] = [batch]) => ({ changes: 0, ids: ((await sql.unsafe(text, params)) as { id: string }[]).map((r) => r.id) });
  const scoped = [batch, [...options.terminalStatuses], options.cutoff];
  switch (statement) {
    case "lock_candidates":
      return { changes: (await selected(STATEMENTS.lock_candidates)).ids.length };
    case "reread_status":
      return selected(STATEMENTS.reread_status, scoped);
    case "delete_sessions":
      return { changes: await changed(STATEMENTS.delete_sessions, scoped) };
    case "find_owed": {
      const owed = owedSessionsStatement(PG_DIALECT, sessionIds, plainLiveConsumer("k.name", "k.retired_at"));
      return selected(owed.sql, owed.order.map((name) => owed.values[name]));
    }
    case "reread_survivors":
      return selected(STATEMENTS.reread_survivors);
    case "delete_deliveries": {
      // Two statements rather than one OR: each then uses its index.
      const byEvent = await changed(STATEMENTS.delete_deliveries);
      const byConsumer = await changed(`DELETE FROM terminal_deliveries WHERE consumer IN (${SESSION_REGISTRATION_CONSUMERS})`);
      return { changes: byEvent + byConsumer };
    }
    case "null_soft_references": {
      let changes = 0;
      for (const { table, column } of SOFT_REFERENCES) changes += await changed(`UPDATE ${table} SET ${column} = NULL WHERE ${column} ${IN_BATCH}`);
      return { changes };
    }
    default:
      return { changes: await changed(STATEMENTS[statement]) };
  }
}
