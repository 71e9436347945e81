// PostgreSQL statements of the sweeps (SPEC §12), the twin of src/ledger/sqlite/sweeps.ts: running-session
// reads and the in-lock re-check. Every function takes the `sql` it runs on: the pool for the reads, the
// transaction's handle for the re-check (both are Bun's SQL).

import type { SQL } from "bun";
import type { LegDirs, LegRow, RunningSession, SweepGuardRow } from "../rows.ts";
import { legRow } from "./row-numbers.ts";

/** Id lists travel as one array parameter (`= ANY($1::text[])`), so one statement serves every batch size. */
const IN_BATCH = "= ANY($1::text[])";

type SessionHead = Omit<RunningSession, "legs">;

const SESSION_HEAD = `s.id, s.status, s.started_at, s.updated_at, s.current_leg_id, s.status_reason_code, s.linked_session_id,
  (SELECT l.status FROM sessions l WHERE l.id = s.linked_session_id) AS linked_status`;

async function attachLegs(sql: SQL, heads: SessionHead[]): Promise<RunningSession[]> {
  if (heads.length === 0) return [];
  const legs: Record<string, unknown>[] = await sql.unsafe(
    `SELECT g.* FROM legs g JOIN sessions s ON s.id = g.session_id
     WHERE g.session_id ${IN_BATCH} AND (g.id = s.current_leg_id OR g.ended_at IS NULL)
     ORDER BY g.session_id, g.seq`,
    [heads.map((h) => h.id)],
  );
  const bySession = new Map<string, LegRow[]>();
  for (const raw of legs) {
    const leg = legRow(raw);
    const list = bySession.get(leg.session_id) ?? [];
    list.push(leg);
    bySession.set(leg.session_id, list);
  }
  return heads.map((head) => {
    const list = bySession.get(head.id) ?? [];
    // The current leg first: it is the one the row describes.
    list.sort((a, b) => Number(b.id === head.current_leg_id) - Number(a.id === head.current_leg_id) || a.seq - b.seq);
    return { ...head, legs: list };
  });
}

export async function listRunningSessions(sql: SQL, options: { afterId?: string | null; limit: number }): Promise<RunningSession[]> {
  const heads: SessionHead[] = await sql.unsafe(`SELECT ${SESSION_HEAD} FROM sessions s WHERE s.status = 'running' AND s.id > $1 ORDER BY s.id LIMIT $2`, [
    options.afterId ?? "",
    options.limit,
  ]);
  return attachLegs(sql, [...heads]);
}

export async function getSweepSession(sql: SQL, id: string): Promise<RunningSession | null> {
  const [head] = (await sql.unsafe(`SELECT ${SESSION_HEAD} FROM sessions s WHERE s.id = $1`, [id])) as SessionHead[];
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
  // Everything inside `dir/` sorts from "dir/" up to "dir0" ('0' follows '/') byte by byte, so the range is
  // compared under the C collation: the database's own may be linguistic, where '/' does not sort so.
  // starts_with would be as exact, but it reads every leg; the range can use a C-collated index.
  const after = `${inside.slice(0, -1)}0`;
  return sql.unsafe(
    `SELECT id, session_id, state_root, artifact_root FROM legs
     WHERE state_root = $1 OR (state_root COLLATE "C" >= $2 AND state_root COLLATE "C" < $3)
        OR artifact_root = $1 OR (artifact_root COLLATE "C" >= $2 AND artifact_root COLLATE "C" < $3)`,
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
