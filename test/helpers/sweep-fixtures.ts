// Rows and processes for sweep tests: sessions and legs inserted at backdated times, real fixture processes as markers.

import { Database } from "bun:sqlite";
import { readFileSync } from "node:fs";
import type { Subprocess } from "bun";
import type { LegRow } from "../../src/ledger/backend.ts";
import type { Ledger } from "../../src/ledger/ledger.ts";
import { hostId, readStartTicks } from "../../src/legs/proc.ts";
import { fixture, type FixtureName } from "./fixtures.ts";

export const HERE = hostId();
export const ELSEWHERE = "another-machine:another-boot";

export interface LegSpec {
  id: string;
  seq?: number;
  hostId?: string | null;
  pid?: number | null;
  pidStartTicks?: number | null;
  commandPid?: number | null;
  commandStartTicks?: number | null;
  startedAt: number;
  heartbeatAt?: number | null;
  endedAt?: number | null;
  status?: string;
  stateRoot?: string;
  artifactRoot?: string;
}

export interface SessionSpec {
  id: string;
  status?: string;
  startedAt: number;
  updatedAt: number;
  legs?: LegSpec[];
  /** Defaults to the last leg. */
  currentLegId?: string | null;
  linkedSessionId?: string;
}

export function legRow(sessionId: string, spec: LegSpec, index: number): LegRow {
  const stateRoot = spec.stateRoot ?? `/nonexistent/runs/${spec.id}`;
  return {
    id: spec.id,
    session_id: sessionId,
    seq: spec.seq ?? index + 1,
    run_id: `run-${spec.id}`,
    state_root: stateRoot,
    artifact_root: spec.artifactRoot ?? `${stateRoot}/artifacts`,
    command: JSON.stringify(["true"]),
    cwd: null,
    pid: spec.pid ?? null,
    pid_start_ticks: spec.pidStartTicks ?? null,
    boot_id: null,
    host_id: spec.hostId === undefined ? (spec.pid != null ? HERE : null) : spec.hostId,
    command_pid: spec.commandPid ?? null,
    command_start_ticks: spec.commandStartTicks ?? null,
    started_at: spec.startedAt,
    heartbeat_at: spec.heartbeatAt ?? null,
    kill_requested_at: null,
    ended_at: spec.endedAt ?? null,
    status: spec.status ?? "running",
    reason_code: null,
    exit_code: null,
    deferred: 0,
    first_msg_id: null,
    last_msg_id: null,
  };
}

/** Inserts a session with its first history row and its legs, in one transaction, with backdated clocks. */
export async function insertSession(ledger: Ledger, spec: SessionSpec): Promise<void> {
  const legs = spec.legs ?? [];
  const current = spec.currentLegId === undefined ? (legs.at(-1)?.id ?? null) : spec.currentLegId;
  const prepared = ledger.prepareCreate("session", {
    id: spec.id,
    status: "running",
    fields: { current_leg_id: current, started_at: spec.startedAt, ...(spec.linkedSessionId ? { linked_session_id: spec.linkedSessionId } : {}) },
  });
  prepared.row.created_at = spec.startedAt;
  prepared.row.updated_at = spec.updatedAt;
  await ledger.transact(async (tx) => {
    await ledger.insertNew(tx, "session", prepared);
    for (const [i, leg] of legs.entries()) await tx.insertLeg(legRow(spec.id, leg, i));
  });
  if (spec.status && spec.status !== "running") {
    await ledger.transition("session", spec.id, { newStatus: spec.status, reasonCode: "run.completed.ok", source: "executor", extraFields: { ended_at: spec.updatedAt } });
    setColumns(ledger, "sessions", spec.id, { updated_at: spec.updatedAt });
  }
}

/** Direct column writes for test setup only (backdating, landing a heartbeat); never a status. */
export function setColumns(ledger: Ledger, table: "sessions" | "legs", id: string, values: Record<string, unknown>): void {
  const db = openRaw(ledger);
  try {
    const keys = Object.keys(values);
    db.query(`UPDATE ${table} SET ${keys.map((k) => `${k} = ?`).join(", ")} WHERE id = ?`).run(...(keys.map((k) => values[k]) as never[]), id);
  } finally {
    db.close();
  }
}

export function openRaw(ledger: Ledger): Database {
  const db = new Database(ledger.location);
  db.run("PRAGMA busy_timeout = 5000");
  return db;
}

export function query<T>(ledger: Ledger, sql: string, ...params: unknown[]): T[] {
  const db = openRaw(ledger);
  try {
    return db.query(sql).all(...(params as never[])) as T[];
  } finally {
    db.close();
  }
}

export interface RunningFixture {
  proc: Subprocess;
  pid: number;
  startTicks: number;
  stop(): Promise<void>;
}

/** Starts a fixture program in a process group of its own (as li starts a command) and reads its start ticks. */
export async function startFixture(name: FixtureName = "forever", args: string[] = [], opts: { ownGroup?: boolean } = {}): Promise<RunningFixture> {
  const proc = Bun.spawn([fixture(name), ...args], { stdin: "ignore", stdout: "ignore", stderr: "ignore", detached: opts.ownGroup ?? true });
  let startTicks: number | null = null;
  for (let i = 0; i < 200 && startTicks === null; i++) {
    startTicks = readStartTicks(proc.pid);
    if (startTicks === null) await Bun.sleep(5);
  }
  if (startTicks === null) throw new Error(`fixture ${name}: no start ticks for pid ${proc.pid}`);
  return {
    proc,
    pid: proc.pid,
    startTicks,
    async stop() {
      try {
        process.kill(-proc.pid, "SIGKILL");
      } catch {
        try {
          proc.kill("SIGKILL");
        } catch {
          // already gone
        }
      }
      await proc.exited;
    },
  };
}

/** A pid that names no process right now: a fixture that has exited and been reaped. */
export async function deadPid(): Promise<{ pid: number; startTicks: number }> {
  const f = await startFixture("forever");
  await f.stop();
  return { pid: f.pid, startTicks: f.startTicks };
}

export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  const state = (() => {
    try {
      const text = readFileSync(`/proc/${pid}/stat`, "utf8");
      return text.slice(text.lastIndexOf(")") + 2, text.lastIndexOf(")") + 3);
    } catch {
      return "?";
    }
  })();
  return state !== "Z" && state !== "?";
}
