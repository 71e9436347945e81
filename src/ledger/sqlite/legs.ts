// Leg, branch and message storage for SQLite (SPEC §3, §8): the rows a leg writes besides its session's status.
// Plain SQL on bun:sqlite's statement cache: each `li agent` runs these once, and building them through
// drizzle costs milliseconds on first use, on every leg's critical path.

import type { Database } from "bun:sqlite";
import type { BranchRow, LegPatch, LegRow, MessageRow, SessionLegState } from "../backend.ts";

type Orm = Database;
type Params = Record<string, string | number | null>;

function client(db: Database): Database {
  return db;
}

/** Columns of `legs` a patch may set: never id, session_id, seq or run_id. */
const LEG_PATCH_COLUMNS: ReadonlySet<string> = new Set([
  "state_root", "artifact_root", "command", "cwd", "pid", "pid_start_ticks", "boot_id", "host_id", "command_pid",
  "command_start_ticks", "started_at", "heartbeat_at", "kill_requested_at", "ended_at", "status", "reason_code",
  "exit_code", "deferred", "first_msg_id", "last_msg_id",
]);
const LEG_COLUMNS = ["id", "session_id", "seq", "run_id", ...LEG_PATCH_COLUMNS] as const;

function insert(db: Database, table: string, columns: readonly string[], row: object): void {
  const values = row as Record<string, unknown>;
  const params: Params = {};
  for (const c of columns) params[`$${c}`] = (values[c] ?? null) as string | number | null;
  db.query(`INSERT INTO ${table} (${columns.join(", ")}) VALUES (${columns.map((c) => `$${c}`).join(", ")})`).run(params);
}

export function insertBranch(orm: Orm, row: BranchRow): void {
  insert(client(orm), "branches", ["id", "session_id", "name", "metadata", "created_at", "updated_at"], row);
}

export function insertLeg(orm: Orm, row: LegRow): void {
  insert(client(orm), "legs", LEG_COLUMNS, row);
}

export function updateLeg(orm: Orm, id: string, patch: LegPatch, opts: { onlyOpen?: boolean } = {}): number {
  const cols = Object.keys(patch).sort();
  if (cols.length === 0) return 0;
  for (const c of cols) if (!LEG_PATCH_COLUMNS.has(c)) throw new Error(`legs.${c} cannot be patched`);
  const params: Params = { $id: id };
  for (const c of cols) params[`$${c}`] = ((patch as Record<string, unknown>)[c] ?? null) as string | number | null;
  const sql = `UPDATE legs SET ${cols.map((c) => `${c} = $${c}`).join(", ")} WHERE id = $id${opts.onlyOpen ? " AND ended_at IS NULL" : ""}`;
  return client(orm).query(sql).run(params).changes;
}

export function getLeg(orm: Orm, id: string): LegRow | null {
  return (client(orm).query("SELECT * FROM legs WHERE id = ?").get(id) as LegRow | null) ?? null;
}

export function listLegs(orm: Orm, sessionId: string): LegRow[] {
  return client(orm).query("SELECT * FROM legs WHERE session_id = ? ORDER BY seq").all(sessionId) as LegRow[];
}

export function nextLegSeq(orm: Orm, sessionId: string): number {
  const row = client(orm).query("SELECT MAX(seq) AS max FROM legs WHERE session_id = ?").get(sessionId) as { max: number | null } | null;
  return (row?.max ?? 0) + 1;
}

export function runIdTaken(orm: Orm, runId: string): boolean {
  return client(orm).query("SELECT 1 FROM legs WHERE run_id = ?").get(runId) !== null;
}

export function getBranch(orm: Orm, id: string): BranchRow | null {
  return (client(orm).query("SELECT * FROM branches WHERE id = ?").get(id) as BranchRow | null) ?? null;
}

export function rebindBranch(orm: Orm, id: string, sessionId: string, now: number): number {
  return client(orm).query("UPDATE branches SET session_id = ?, updated_at = ? WHERE id = ?").run(sessionId, now, id).changes;
}

export function relinkInvocation(orm: Orm, sessionId: string, invocationId: string): void {
  client(orm).query("UPDATE sessions SET invocation_id = ? WHERE id = ?").run(invocationId, sessionId);
}

export function insertMessage(orm: Orm, row: MessageRow): void {
  insert(client(orm), "messages", ["id", "session_id", "branch_id", "leg_id", "role", "content", "truncated", "created_at"], row);
}

export function listMessages(orm: Orm, sessionId: string): MessageRow[] {
  return client(orm).query("SELECT * FROM messages WHERE session_id = ? ORDER BY created_at, id").all(sessionId) as MessageRow[];
}

export function sessionLegState(orm: Orm, sessionId: string): SessionLegState | null {
  const q = client(orm).query("SELECT status, status_reason_code, current_leg_id, node_metadata, first_msg_id FROM sessions WHERE id = ?");
  return (q.get(sessionId) as SessionLegState | null) ?? null;
}
