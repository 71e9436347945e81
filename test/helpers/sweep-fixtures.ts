// Rows and processes for sweep tests: sessions and legs inserted at backdated times, real fixture processes as markers.

import { existsSync } from "node:fs";
import { join } from "node:path";
import type { Subprocess } from "bun";
import type { LegRow } from "../../src/ledger/rows.ts";
import type { Ledger } from "../../src/ledger/ledger.ts";
import { hostId, readStartTicks } from "../../src/host/proc.ts";
import { fixture, type FixtureName } from "./fixtures.ts";
import { rowsOf, tempDir } from "./ledger.ts";
import type { SqlParam } from "./ledger-rows.ts";
import { NeverHappens, signalPid, until } from "./until.ts";

export const HERE = hostId();
export const ELSEWHERE = "another-machine:another-boot";

export interface LegSpec {
  id: string;
  seq?: number;
  /** Default `run-<id>`. */
  runId?: string;
  /** The command's argv; default `true`. */
  command?: string[];
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
  exitCode?: number | null;
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

/** One temp directory per process holds the default run directories: each a path inside it that does not exist until something writes it. */
let defaultRunsRoot: string | undefined;
const runsRoot = () => (defaultRunsRoot ??= tempDir("li-sweep-runs-"));

/** A leg row as a leg's setup writes it (what `spec` leaves out is null, or the default it names). */
export function legRow(sessionId: string, spec: LegSpec, index: number): LegRow {
  const stateRoot = spec.stateRoot ?? join(runsRoot(), spec.id);
  return {
    id: spec.id,
    session_id: sessionId,
    seq: spec.seq ?? index + 1,
    run_id: spec.runId ?? `run-${spec.id}`,
    state_root: stateRoot,
    artifact_root: spec.artifactRoot ?? `${stateRoot}/artifacts`,
    command: JSON.stringify(spec.command ?? ["true"]),
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
    exit_code: spec.exitCode ?? null,
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
    await setColumns(ledger, "sessions", spec.id, { updated_at: spec.updatedAt });
  }
}

/** Direct column writes for test setup only (backdating, landing a heartbeat); never a status. */
export async function setColumns(ledger: Ledger, table: "sessions" | "legs", id: string, values: Record<string, SqlParam>): Promise<void> {
  const keys = Object.keys(values);
  await rowsOf(ledger).run(`UPDATE ${table} SET ${keys.map((k) => `${k} = ?`).join(", ")} WHERE id = ?`, ...keys.map((k) => values[k]!), id);
}

/** Rows of one query against a test ledger, on either backend. */
export function query<T>(ledger: Ledger, sql: string, ...params: SqlParam[]): Promise<T[]> {
  return rowsOf(ledger).all<T>(sql, ...params);
}

export interface RunningFixture {
  proc: Subprocess;
  pid: number;
  startTicks: number;
  stop(): Promise<void>;
}

/** Fixtures that announce readiness by writing the file named by their first argument. */
const ANNOUNCES_READINESS: ReadonlySet<FixtureName> = new Set(["forever", "ignore-sigterm"]);

/**
 * Starts a fixture program in a process group of its own (as li starts a command) and returns once it is
 * ready: a fixture that announces readiness has written its file (ignore-sigterm only after installing
 * its trap, so a SIGTERM sent next is really ignored), and its start ticks are readable.
 */
export async function startFixture(name: FixtureName = "forever", args: string[] = [], opts: { ownGroup?: boolean } = {}): Promise<RunningFixture> {
  const readyFile = args.length === 0 && ANNOUNCES_READINESS.has(name) ? join(tempDir("li-fixture-"), "ready") : null;
  const proc = Bun.spawn([fixture(name), ...(readyFile ? [readyFile] : args)], { stdin: "ignore", stdout: "ignore", stderr: "ignore", detached: opts.ownGroup ?? true });
  const startTicks = await until(`fixture ${name} (pid ${proc.pid}) to start`, () => {
    if (proc.exitCode !== null || proc.signalCode !== null) throw new NeverHappens(`it exited early (${proc.exitCode ?? proc.signalCode})`);
    if (readyFile && !existsSync(readyFile)) return null;
    return readStartTicks(proc.pid);
  });
  return {
    proc,
    pid: proc.pid,
    startTicks,
    async stop() {
      try {
        // Our own child, spawned in a group of its own (detached), so -pid names only that group.
        if (opts.ownGroup ?? true) signalPid(proc.pid, "SIGKILL", { group: true, what: `fixture ${name}` });
        else proc.kill("SIGKILL");
      } catch {
        // already gone
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

