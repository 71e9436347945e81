// SQLite statements of the sweeps (SPEC §12): running-session reads, the in-lock re-check, leg closing and the prune batch.

import type { Database } from "bun:sqlite";
import type { LegRow, LegDirs, RunningSession, SweepGuardRow } from "../rows.ts";
import { plainLiveConsumer } from "../schema-checks.ts";
import { owedSessionsStatement } from "../rules/owed.ts";
import { SOFT_REFERENCES, type PruneSqlStatement } from "../rules/prune.ts";
import { SWEEP_SESSION_HEAD, sweepLegsWhere, withSweepLegs, type SweepSessionHead } from "../rules/sweep-sessions.ts";
import { SQLITE_DIALECT } from "./dialect.ts";
import type { PruneStatementResult } from "../sweep-store.ts";

/** Id lists travel as one JSON parameter, so one prepared statement serves every batch size. */
const ids = (list: readonly string[]) => JSON.stringify(list);
const IN_IDS = "(SELECT value FROM json_each(?))";

function attachLegs(db: Database, heads: SweepSessionHead[]): RunningSession[] {
  if (heads.length === 0) return [];
  const legs = db
    .query<LegRow, [string]>(
      `SELECT g.* FROM legs g JOIN sessions s ON s.id = g.session_id
       WHERE ${sweepLegsWhere(`g.session_id IN ${IN_IDS}`)}
       ORDER BY g.session_id, g.seq`,
    )
    .all(ids(heads.map((h) => h.id)));
  return withSweepLegs(heads, legs);
}

export function listRunningSessions(db: Database, options: { afterId?: string | null; limit: number }): RunningSession[] {
  const heads = db
    .query<SweepSessionHead, [string, number]>(`SELECT ${SWEEP_SESSION_HEAD} FROM sessions s WHERE s.status = 'running' AND s.id > ? ORDER BY s.id LIMIT ?`)
    .all(options.afterId ?? "", options.limit);
  return attachLegs(db, heads);
}

export function getSweepSession(db: Database, id: string): RunningSession | null {
  const head = db.query<SweepSessionHead, [string]>(`SELECT ${SWEEP_SESSION_HEAD} FROM sessions s WHERE s.id = ?`).get(id);
  return head ? attachLegs(db, [head])[0]! : null;
}

export function listPruneCandidates(db: Database, options: { terminalStatuses: readonly string[]; cutoff: number; afterId: string | null; limit: number }): string[] {
  return db
    .query<{ id: string }, [string, number, string, number]>(
      // Walks the primary key from the last batch on (`+` keeps the planner off the status index, which
      // would re-read and sort every remaining candidate for each batch).
      `SELECT id FROM sessions WHERE +status IN ${IN_IDS} AND +updated_at < ? AND id > ? ORDER BY id LIMIT ?`,
    )
    .all(ids(options.terminalStatuses), options.cutoff, options.afterId ?? "", options.limit)
    .map((r) => r.id);
}

export function countPruneCandidates(db: Database, options: { terminalStatuses: readonly string[]; cutoff: number }): number {
  // One range scan per status on the (status, updated_at) index: asked once per prune, only for its progress line.
  const row = db.query<{ n: number }, [string, number]>(`SELECT COUNT(*) AS n FROM sessions WHERE status IN ${IN_IDS} AND updated_at < ?`).get(ids(options.terminalStatuses), options.cutoff);
  return row?.n ?? 0;
}

export function legsUsingDirectory(db: Database, dir: string): LegDirs[] {
  const inside = dir.endsWith("/") ? dir : `${dir}/`;
  // Everything inside `dir/` sorts from "dir/" up to "dir0" ('0' follows '/'): a range on each root's
  // index instead of LIKE (names may hold % and _) or substr (which reads every leg).
  const after = `${inside.slice(0, -1)}0`;
  return db
    .query<LegDirs, [string, string, string]>(
      `SELECT id, session_id, state_root, artifact_root FROM legs
       WHERE state_root = ?1 OR (state_root >= ?2 AND state_root < ?3) OR artifact_root = ?1 OR (artifact_root >= ?2 AND artifact_root < ?3)`,
    )
    .all(dir, inside, after);
}

export function passiveCheckpoint(db: Database): void {
  db.run("PRAGMA wal_checkpoint(PASSIVE)");
}

export function readSweepGuard(db: Database, sessionId: string): SweepGuardRow | null {
  const row = db
    .query<{ status: string; current_leg_id: string | null; heartbeat_at: number | null }, [string]>(
      `SELECT s.status, s.current_leg_id, g.heartbeat_at FROM sessions s LEFT JOIN legs g ON g.id = s.current_leg_id WHERE s.id = ?`,
    )
    .get(sessionId);
  return row ? { status: row.status, currentLegId: row.current_leg_id, heartbeatAt: row.heartbeat_at } : null;
}

export function legsOfSessions(db: Database, sessionIds: readonly string[]): LegDirs[] {
  return db
    .query<LegDirs, [string]>(
      `SELECT id, session_id, state_root, artifact_root FROM legs WHERE session_id IN ${IN_IDS}`,
    )
    .all(ids(sessionIds));
}

const SESSION_TRANSITIONS = `SELECT id FROM status_transitions WHERE entity_type = 'session' AND entity_id IN ${IN_IDS}`;
const SESSION_REGISTRATION_CONSUMERS = `SELECT consumer FROM terminal_callbacks WHERE scope = 'leg' AND session_id IN ${IN_IDS}`;

/** The SQL of each statement; every one takes the batch's ids as its one JSON parameter (some take more). */
const STATEMENTS: Record<PruneSqlStatement, string> = {
  // A write that changes nothing: it is what takes the lock before the deciding status is read (ADR-0105).
  // A write that changes nothing but takes the candidates' locks (§12.5); it leaves the status column alone.
  lock_candidates: `UPDATE sessions SET updated_at = updated_at WHERE id IN ${IN_IDS}`,
  reread_status: `SELECT id FROM sessions WHERE id IN ${IN_IDS} AND status IN (SELECT value FROM json_each(?)) AND updated_at < ?`,
  find_owed: "", // built with the batch, see owedSessionsStatement
  delete_deliveries: `DELETE FROM terminal_deliveries WHERE transition_id IN (${SESSION_TRANSITIONS})`,
  delete_registration_consumers: `DELETE FROM consumers WHERE name IN (${SESSION_REGISTRATION_CONSUMERS})`,
  delete_registrations: `DELETE FROM terminal_callbacks WHERE session_id IN ${IN_IDS}`,
  delete_messages: `DELETE FROM messages WHERE session_id IN ${IN_IDS}`,
  delete_legs: `DELETE FROM legs WHERE session_id IN ${IN_IDS}`,
  delete_branches: `DELETE FROM branches WHERE session_id IN ${IN_IDS}`,
  delete_transitions: `DELETE FROM status_transitions WHERE entity_type = 'session' AND entity_id IN ${IN_IDS}`,
  null_soft_references: "", // several statements, see nullSoftReferences
  // Still terminal and old: a session reopened mid-batch (were the lock ever not held) survives it, and
  // the re-read after it then abandons the whole batch rather than leave it stripped of its history.
  delete_sessions: `DELETE FROM sessions WHERE id IN ${IN_IDS} AND status IN (SELECT value FROM json_each(?)) AND updated_at < ?`,
  reread_survivors: `SELECT id FROM sessions WHERE id IN ${IN_IDS}`,
};

export function pruneStatement(
  db: Database,
  statement: PruneSqlStatement,
  sessionIds: readonly string[],
  options: { terminalStatuses: readonly string[]; cutoff: number },
): PruneStatementResult {
  const list = ids(sessionIds);
  switch (statement) {
    case "reread_status": {
      const found = db.query<{ id: string }, [string, string, number]>(STATEMENTS.reread_status).all(list, ids(options.terminalStatuses), options.cutoff);
      return { changes: 0, ids: found.map((r) => r.id) };
    }
    case "delete_sessions":
      return { changes: db.query<never, [string, string, number]>(STATEMENTS.delete_sessions).run(list, ids(options.terminalStatuses), options.cutoff).changes };
    case "find_owed": {
      const owed = owedSessionsStatement(SQLITE_DIALECT, sessionIds, plainLiveConsumer("k.name", "k.retired_at"));
      const found = db.query<{ id: string }, [Record<string, string>]>(owed.sql).all(owed.values as Record<string, string>);
      return { changes: 0, ids: found.map((r) => r.id) };
    }
    case "reread_survivors": {
      const found = db.query<{ id: string }, [string]>(STATEMENTS[statement]).all(list);
      return { changes: 0, ids: found.map((r) => r.id) };
    }
    case "delete_deliveries": {
      // Two statements rather than one OR: each then uses its index.
      const byEvent = db.query(STATEMENTS.delete_deliveries).run(list).changes;
      const byConsumer = db.query(`DELETE FROM terminal_deliveries WHERE consumer IN (${SESSION_REGISTRATION_CONSUMERS})`).run(list).changes;
      return { changes: byEvent + byConsumer };
    }
    case "null_soft_references": {
      let changes = 0;
      for (const { table, column } of SOFT_REFERENCES) {
        changes += db.query(`UPDATE ${table} SET ${column} = NULL WHERE ${column} IN ${IN_IDS}`).run(list).changes;
      }
      return { changes };
    }
    default:
      return { changes: db.query(STATEMENTS[statement]).run(list).changes };
  }
}
