// Opens a leg's durable record in ONE transaction (SPEC §8): branch, session, leg row with markers, current_leg_id.

import type { TransactionOptions, Tx } from "../ledger/backend.ts";
import type { BranchRow, LegRow } from "../ledger/rows.ts";
import type { Awaitable } from "../util/awaitable.ts";
import type { Ledger } from "../ledger/ledger.ts";
import { applyTransition, validateTransition, type AppliedTransition } from "../ledger/transition.ts";
import type { ArtifactContract } from "../contracts/artifacts.ts";
import { machineOf, type ProcessIdentity } from "../host/proc.ts";
import type { RunDir } from "./rundir.ts";

export interface LegIds {
  sessionId: string;
  branchId: string;
  legId: string;
  runId: string;
}

export interface LegPlan extends LegIds {
  run: RunDir;
  argv: readonly string[];
  /** The command's working directory. */
  cwd: string;
  startedAt: number;
  supervisor: ProcessIdentity;
  contract: ArtifactContract | null;
  invocationId: string | null;
  linkedSessionId: string | null;
  /** The deferred leg this one continues (--auto-resume): its registration is passed on (§9.1). */
  previousLegId?: string | null;
}

/** Extra writes that must commit with the setup (e.g. the leg's callback registration, §9.1). */
export type AlsoInSetup = (tx: Tx, ids: LegIds & { readonly previousLegId?: string | null }) => Awaitable<void>;

/** The keys of §8.5 a leg writes into `sessions.node_metadata`. */
export const MARKER_KEYS = ["leg_id", "run_id", "supervisor_pid", "supervisor_start_ticks", "boot_id", "host_id", "command_pid", "command_start_ticks"] as const;

/** The markers of §8.5 as stored in `sessions.node_metadata`. */
export function nodeMetadata(plan: LegPlan, command?: { pid: number; startTicks: number | null }): Partial<Record<(typeof MARKER_KEYS)[number], unknown>> {
  return {
    leg_id: plan.legId,
    run_id: plan.runId,
    supervisor_pid: plan.supervisor.pid,
    supervisor_start_ticks: plan.supervisor.startTicks,
    boot_id: plan.supervisor.bootId,
    host_id: plan.supervisor.hostId,
    ...(command ? { command_pid: command.pid, command_start_ticks: command.startTicks } : {}),
  };
}

/**
 * The session row's copy of its current leg's host (li ls / li ui's host filter seeks it by index): written
 * in every write that sets current_leg_id. The machine part of a host id (MACHINE:BOOT) names the host across reboots.
 */
export function sessionHostFields(leg: Pick<LegRow, "host_id" | "host_name">): { host_name: string | null; host_machine: string | null } {
  return { host_name: leg.host_name ?? null, host_machine: leg.host_id === null ? null : machineOf(leg.host_id) };
}

export function legRow(plan: LegPlan, seq: number): LegRow {
  return {
    id: plan.legId,
    session_id: plan.sessionId,
    seq,
    run_id: plan.runId,
    state_root: plan.run.stateRoot,
    artifact_root: plan.run.artifactRoot,
    command: JSON.stringify(plan.argv),
    cwd: plan.cwd,
    pid: plan.supervisor.pid,
    pid_start_ticks: plan.supervisor.startTicks,
    boot_id: plan.supervisor.bootId,
    host_id: plan.supervisor.hostId,
    host_name: plan.supervisor.hostName,
    command_pid: null,
    command_start_ticks: null,
    started_at: plan.startedAt,
    heartbeat_at: plan.startedAt,
    kill_requested_at: null,
    ended_at: null,
    status: "running",
    reason_code: "run.started.ok",
    exit_code: null,
    deferred: 0,
    first_msg_id: null,
    last_msg_id: null,
  };
}

/** A new branch and session (`running`, `run.started.ok`) with this leg current. */
export async function setupNewSession(ledger: Ledger, plan: LegPlan, alsoInSetup?: AlsoInSetup, options?: TransactionOptions): Promise<AppliedTransition> {
  return ledger.transact((tx) => writeNewSession(tx, ledger, plan, alsoInSetup), options);
}

/**
 * The writes of a new session inside an open transaction. A branch row that already exists (a resume
 * whose session was removed, §10) is pointed at the new session instead of inserted.
 */
export async function writeNewSession(tx: Tx, ledger: Ledger, plan: LegPlan, alsoInSetup?: AlsoInSetup): Promise<AppliedTransition> {
  const transition = await writeSessionRows(tx, ledger, newSessionRows(plan));
  await alsoInSetup?.(tx, plan);
  return transition;
}

/** A new session's rows as data: what setup writes, and what a spool entry keeps when setup never reached the ledger (§17). */
export interface NewSessionRows {
  branch: BranchRow;
  /** The session's creation fields (`Ledger.prepareCreate`'s allowlist checks them when written). */
  session: Record<string, string | number | null>;
  leg: LegRow;
}

/** What a leg whose setup never reached the ledger writes first at replay: its session, branch, leg and notice (§17, item 4). */
export interface SpooledSetup extends NewSessionRows {
  /** The leg's registration (§9.1); its consumer's watermark is taken at replay. */
  registration: { id: string; argv: string[]; origin: string; hostId: string; createdAt: number } | null;
}

export function newSessionRows(plan: LegPlan): NewSessionRows {
  return {
    branch: { id: plan.branchId, session_id: plan.sessionId, name: null, metadata: null, created_at: plan.startedAt, updated_at: plan.startedAt },
    session: {
      id: plan.sessionId,
      started_at: plan.startedAt,
      current_leg_id: plan.legId,
      artifacts_path: plan.run.artifactRoot,
      artifact_contract_json: plan.contract === null ? null : JSON.stringify(plan.contract),
      node_metadata: JSON.stringify(nodeMetadata(plan)),
      invocation_id: plan.invocationId,
      linked_session_id: plan.linkedSessionId,
    },
    leg: legRow(plan, 1),
  };
}

/** Writes a new session's rows inside an open transaction, times from its start; returns the session's first transition. */
export async function writeSessionRows(tx: Tx, ledger: Ledger, rows: NewSessionRows): Promise<AppliedTransition> {
  const { id, ...fields } = rows.session;
  const startedAt = rows.leg.started_at;
  // The host is the leg's (not the spooled session fields': an entry spooled before li kept it has none).
  const prepared = ledger.prepareCreate("session", { id: String(id), source: "executor", actor: "li agent", fields: { ...fields, ...sessionHostFields(rows.leg) } });
  prepared.row.created_at = startedAt;
  prepared.row.updated_at = startedAt;
  // One statement for a new branch; a branch that exists (a resume whose session was removed) is pointed at the new session.
  if (!(await tx.insertBranchIfAbsent(rows.branch))) await tx.rebindBranch(rows.branch.id, rows.branch.session_id, startedAt);
  const transition = await ledger.insertNew(tx, "session", prepared);
  await tx.insertLeg(rows.leg);
  return transition;
}

/**
 * A further leg on a running session (--auto-resume): a same-status guarded write moves
 * current_leg_id to the new leg and inserts its row. Returns the session's status when it is
 * no longer running (someone else ended it), else null.
 */
export async function setupContinuation(ledger: Ledger, plan: LegPlan, alsoInSetup?: AlsoInSetup): Promise<string | null> {
  const validated = validateTransition("session", {
    newStatus: "running",
    reasonCode: "run.started.ok",
    reasonSummary: `leg ${plan.runId} continues the session`,
    source: "executor",
    actor: "li agent",
    expectedStatuses: ["running"],
    extraFields: { current_leg_id: plan.legId, ...sessionHostFields({ host_id: plan.supervisor.hostId, host_name: plan.supervisor.hostName }), node_metadata: nodeMetadata(plan) },
    alsoInTransaction: async (tx) => {
      await tx.insertLeg(legRow(plan, await tx.nextLegSeq(plan.sessionId)));
      await alsoInSetup?.(tx, plan);
    },
  });
  const outcome = await ledger.transact((tx, ctx) => applyTransition(tx, ctx, validated, plan.sessionId));
  if (outcome.result === "applied") return null;
  if (outcome.result === "conflict") return outcome.current.status ?? "unknown";
  return "rejected";
}

/**
 * Records the command's own markers once it runs: leg bookkeeping, not a status write. The session's
 * node_metadata gets them only with the final guarded write (ADR-0105: markers move with a status write,
 * never in a write of their own); meanwhile the leg row is where liveness is judged (§12).
 */
export async function recordCommandMarkers(ledger: Ledger, legId: string, command: { pid: number; startTicks: number | null }, scope?: { containment: string; cgroup: string | null }): Promise<void> {
  const where = scope ? { containment: scope.containment, cgroup_path: scope.cgroup } : {};
  await ledger.backend.transaction((tx) => tx.updateLeg(legId, { command_pid: command.pid, command_start_ticks: command.startTicks, ...where }, { onlyOpen: true }));
}
