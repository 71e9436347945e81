// Leg, branch and message storage for SQLite (SPEC §3, §8): the rows a leg writes besides its session's status.
// Plain SQL on bun:sqlite's statement cache: each `li agent` runs these once, and building them through
// drizzle costs milliseconds on first use, on every leg's critical path.

import type { Database } from "bun:sqlite";
import type { BranchRow, LegPatch, LegRow, MessageRow, SessionLegState } from "../rows.ts";

type Params = Record<string, string | number | null>;

/** Columns of `legs` a patch may set: never id, session_id, seq or run_id, nor heartbeat_at (refreshHeartbeat). */
const LEG_PATCH_COLUMNS: ReadonlySet<string> = new Set([
  "state_root", "artifact_root", "command", "cwd", "pid", "pid_start_ticks", "boot_id", "host_id", "host_name", "command_pid",
  "command_start_ticks", "started_at", "kill_requested_at", "ended_at", "status", "reason_code",
  "exit_code", "deferred", "first_msg_id", "last_msg_id", "containment", "cgroup_path", "cpu_user_seconds",
  "cpu_system_seconds", "peak_rss_bytes",
]);
const LEG_COLUMNS = ["id", "session_id", "seq", "run_id", "heartbeat_at", ...LEG_PATCH_COLUMNS] as const;

function insert(db: Database, table: string, columns: readonly string[], row: object): void {
  const values = row as Record<string, unknown>;
  const params: Params = {};
  for (const c of columns) params[`$${c}`] = (values[c] ?? null) as string | number | null;
  db.query(`INSERT INTO ${table} (${columns.join(", ")}) VALUES (${columns.map((c) => `$${c}`).join(", ")})`).run(params);
}

const BRANCH_COLUMNS = ["id", "session_id", "name", "metadata", "created_at", "updated_at"] as const;

export function insertBranch(db: Database, row: BranchRow): void {
  insert(db, "branches", BRANCH_COLUMNS, row);
}

/** The branch unless one with its id exists: whether it was inserted. */
export function insertBranchIfAbsent(db: Database, row: BranchRow): boolean {
  const values = row as unknown as Record<string, unknown>;
  const params: Params = {};
  for (const c of BRANCH_COLUMNS) params[`$${c}`] = (values[c] ?? null) as string | number | null;
  return db.query(`INSERT INTO branches (${BRANCH_COLUMNS.join(", ")}) VALUES (${BRANCH_COLUMNS.map((c) => `$${c}`).join(", ")}) ON CONFLICT (id) DO NOTHING`).run(params).changes === 1;
}

export function insertLeg(db: Database, row: LegRow): void {
  insert(db, "legs", LEG_COLUMNS, row);
}

export function updateLeg(db: Database, id: string, patch: LegPatch, opts: { onlyOpen?: boolean } = {}): number {
  const cols = Object.keys(patch).sort();
  if (cols.length === 0) return 0;
  for (const c of cols) if (!LEG_PATCH_COLUMNS.has(c)) throw new Error(`legs.${c} cannot be patched`);
  const params: Params = { $id: id };
  for (const c of cols) params[`$${c}`] = ((patch as Record<string, unknown>)[c] ?? null) as string | number | null;
  const sql = `UPDATE legs SET ${cols.map((c) => `${c} = $${c}`).join(", ")} WHERE id = $id${opts.onlyOpen ? " AND ended_at IS NULL" : ""}`;
  return db.query(sql).run(params).changes;
}

/**
 * Raises an open leg's heartbeat_at to `at`, never lowers it: a beat that commits after a newer one
 * (it waited longer for the lock) leaves the newer time, which another host's reaper reads (§8.5, §12.1).
 */
export function refreshHeartbeat(db: Database, id: string, at: number): number {
  return db.query("UPDATE legs SET heartbeat_at = ?1 WHERE id = ?2 AND ended_at IS NULL AND (heartbeat_at IS NULL OR heartbeat_at < ?1)").run(at, id).changes;
}

export function getLeg(db: Database, id: string): LegRow | null {
  return (db.query("SELECT * FROM legs WHERE id = ?").get(id) as LegRow | null) ?? null;
}

export function nextLegSeq(db: Database, sessionId: string): number {
  const row = db.query("SELECT MAX(seq) AS max FROM legs WHERE session_id = ?").get(sessionId) as { max: number | null } | null;
  return (row?.max ?? 0) + 1;
}

export function runIdTaken(db: Database, runId: string): boolean {
  return db.query("SELECT 1 FROM legs WHERE run_id = ?").get(runId) !== null;
}

export function getBranch(db: Database, id: string): BranchRow | null {
  return (db.query("SELECT * FROM branches WHERE id = ?").get(id) as BranchRow | null) ?? null;
}

export function rebindBranch(db: Database, id: string, sessionId: string, now: number): number {
  return db.query("UPDATE branches SET session_id = ?, updated_at = ? WHERE id = ?").run(sessionId, now, id).changes;
}

export function relinkInvocation(db: Database, sessionId: string, invocationId: string): void {
  db.query("UPDATE sessions SET invocation_id = ? WHERE id = ?").run(invocationId, sessionId);
}

export function insertMessage(db: Database, row: MessageRow): void {
  insert(db, "messages", ["id", "session_id", "branch_id", "leg_id", "role", "content", "truncated", "created_at"], row);
}

export function listMessages(db: Database, sessionId: string): MessageRow[] {
  return db.query("SELECT * FROM messages WHERE session_id = ? ORDER BY created_at, id").all(sessionId) as MessageRow[];
}

export function sessionLegState(db: Database, sessionId: string): SessionLegState | null {
  const q = db.query("SELECT status, status_reason_code, current_leg_id, node_metadata, first_msg_id FROM sessions WHERE id = ?");
  return (q.get(sessionId) as SessionLegState | null) ?? null;
}
