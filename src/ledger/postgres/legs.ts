// Leg, branch and message storage for PostgreSQL (SPEC §3, §8), the twin of src/ledger/sqlite/legs.ts:
// the rows a leg writes besides its session's status. Every function takes the `sql` it runs on (the
// pool, or a transaction's handle).

import type { SQL } from "bun";
import type { BranchRow, LegPatch, LegRow, MessageRow, SessionLegState } from "../rows.ts";
import { legRow, num } from "./row-numbers.ts";

/** Columns of `legs` a patch may set: never id, session_id, seq or run_id, nor heartbeat_at (refreshHeartbeat). */
const LEG_PATCH_COLUMNS: ReadonlySet<string> = new Set([
  "state_root", "artifact_root", "command", "cwd", "pid", "pid_start_ticks", "boot_id", "host_id", "host_name", "command_pid",
  "command_start_ticks", "started_at", "kill_requested_at", "ended_at", "status", "reason_code",
  "exit_code", "deferred", "first_msg_id", "last_msg_id", "containment", "cgroup_path", "cpu_user_seconds",
  "cpu_system_seconds", "peak_rss_bytes",
]);
const LEG_COLUMNS = ["id", "session_id", "seq", "run_id", "heartbeat_at", ...LEG_PATCH_COLUMNS] as const;
const BRANCH_COLUMNS = ["id", "session_id", "name", "metadata", "created_at", "updated_at"] as const;
const MESSAGE_COLUMNS = ["id", "session_id", "branch_id", "leg_id", "role", "content", "truncated", "created_at"] as const;

/** INSERT of the listed columns (names are li's own constants, never input); a missing value is NULL. */
async function insert(sql: SQL, table: string, columns: readonly string[], row: object): Promise<void> {
  const values = row as Record<string, unknown>;
  await sql.unsafe(
    `INSERT INTO ${table} (${columns.join(", ")}) VALUES (${columns.map((_, i) => `$${i + 1}`).join(", ")})`,
    columns.map((c) => values[c] ?? null),
  );
}

export const insertBranch = (sql: SQL, row: BranchRow) => insert(sql, "branches", BRANCH_COLUMNS, row);

/** The branch unless one with its id exists: whether it was inserted (one round trip, not a read and then an insert). */
export async function insertBranchIfAbsent(sql: SQL, row: BranchRow): Promise<boolean> {
  const values = row as unknown as Record<string, unknown>;
  const result = await sql.unsafe(
    `INSERT INTO branches (${BRANCH_COLUMNS.join(", ")}) VALUES (${BRANCH_COLUMNS.map((_, i) => `$${i + 1}`).join(", ")}) ON CONFLICT (id) DO NOTHING`,
    BRANCH_COLUMNS.map((c) => values[c] ?? null),
  );
  return result.count === 1;
}
export const insertLeg = (sql: SQL, row: LegRow) => insert(sql, "legs", LEG_COLUMNS, row);
export const insertMessage = (sql: SQL, row: MessageRow) => insert(sql, "messages", MESSAGE_COLUMNS, row);

export async function updateLeg(sql: SQL, id: string, patch: LegPatch, opts: { onlyOpen?: boolean } = {}): Promise<number> {
  const cols = Object.keys(patch).sort();
  if (cols.length === 0) return 0;
  for (const c of cols) if (!LEG_PATCH_COLUMNS.has(c)) throw new Error(`legs.${c} cannot be patched`);
  const values = cols.map((c) => (patch as Record<string, unknown>)[c] ?? null);
  const result = await sql.unsafe(
    `UPDATE legs SET ${cols.map((c, i) => `${c} = $${i + 2}`).join(", ")} WHERE id = $1${opts.onlyOpen ? " AND ended_at IS NULL" : ""}`,
    [id, ...values],
  );
  return result.count;
}

/**
 * Raises an open leg's heartbeat_at to `at`, never lowers it: a beat that commits after a newer one
 * (it waited longer for its connection) leaves the newer time, which another host's reaper reads (§8.5, §12.1).
 */
export async function refreshHeartbeat(sql: SQL, id: string, at: number): Promise<number> {
  const result = await sql.unsafe("UPDATE legs SET heartbeat_at = $2 WHERE id = $1 AND ended_at IS NULL AND (heartbeat_at IS NULL OR heartbeat_at < $2)", [id, at]);
  return result.count;
}

export async function getLeg(sql: SQL, id: string): Promise<LegRow | null> {
  const [row] = await sql.unsafe("SELECT * FROM legs WHERE id = $1", [id]);
  return row ? legRow(row) : null;
}

export async function listLegs(sql: SQL, sessionId: string): Promise<LegRow[]> {
  const rows = await sql.unsafe("SELECT * FROM legs WHERE session_id = $1 ORDER BY seq", [sessionId]);
  return rows.map(legRow);
}

export async function nextLegSeq(sql: SQL, sessionId: string): Promise<number> {
  const [row] = await sql.unsafe("SELECT MAX(seq) AS max FROM legs WHERE session_id = $1", [sessionId]);
  return (num(row?.max) ?? 0) + 1;
}

export async function runIdTaken(sql: SQL, runId: string): Promise<boolean> {
  const rows = await sql.unsafe("SELECT 1 AS x FROM legs WHERE run_id = $1", [runId]);
  return rows.length > 0;
}

export async function getBranch(sql: SQL, id: string): Promise<BranchRow | null> {
  const [row] = await sql.unsafe("SELECT * FROM branches WHERE id = $1", [id]);
  return (row as BranchRow | undefined) ?? null;
}

export async function listBranches(sql: SQL, sessionId: string): Promise<BranchRow[]> {
  const rows = await sql.unsafe("SELECT * FROM branches WHERE session_id = $1 ORDER BY created_at, id", [sessionId]);
  return rows as BranchRow[];
}

export async function rebindBranch(sql: SQL, id: string, sessionId: string, now: number): Promise<number> {
  return (await sql.unsafe("UPDATE branches SET session_id = $1, updated_at = $2 WHERE id = $3", [sessionId, now, id])).count;
}

export async function relinkInvocation(sql: SQL, sessionId: string, invocationId: string): Promise<void> {
  await sql.unsafe("UPDATE sessions SET invocation_id = $1 WHERE id = $2", [invocationId, sessionId]);
}

export async function listMessages(sql: SQL, sessionId: string): Promise<MessageRow[]> {
  const rows = await sql.unsafe("SELECT * FROM messages WHERE session_id = $1 ORDER BY created_at, id", [sessionId]);
  return rows as MessageRow[];
}

export async function sessionLegState(sql: SQL, sessionId: string): Promise<SessionLegState | null> {
  const [row] = await sql.unsafe("SELECT status, status_reason_code, current_leg_id, node_metadata, first_msg_id FROM sessions WHERE id = $1", [sessionId]);
  return (row as SessionLegState | undefined) ?? null;
}
