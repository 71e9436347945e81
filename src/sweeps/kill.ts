// `li kill ID` (SPEC §12.2): ask a live leg to cancel itself, force it after the grace, or write a dead leg's session directly.

import type { EntityRow, LegRow, RunningSession } from "../ledger/rows.ts";
import { isUsablePid } from "../host/proc.ts";
import type { Ledger } from "../ledger/ledger.ts";
import type { LookupKind } from "../ledger/reads.ts";
import { ambiguityMessage, resolveIn } from "../ledger/resolve.ts";
import type { AppliedTransition } from "../ledger/transition.ts";
import { UnknownIdError, UsageError } from "../util/errors.ts";
import { judgeSession, killOrphanCommand, livenessEvidence, type Judgement } from "./judge.ts";
import { hostEnv, type SweepEnv } from "./sweep.ts";
import { guardConflict, writeJudged, type JudgedWriteOutcome } from "./write.ts";

/** `li kill` refuses (exit 1): terminal target, a leg of another host (§16); an unknown id is a usage error (2). */
export class KillRefusedError extends UsageError {
  constructor(message: string) {
    super(message, 1);
  }
}

export interface KillOptions {
  graceSeconds: number;
  reason?: string;
}

export const KILL_DEFAULTS: Readonly<KillOptions> = { graceSeconds: 5 };

/** What `li kill` did; the CLI renders it and the notice of any write it made was pushed. */
export interface KillResult {
  session_id: string;
  /** terminated: the leg finalized itself after SIGTERM; force_killed: SIGKILL after the grace; written: dead or markerless leg written directly. */
  action: "terminated" | "force_killed" | "written" | "lost_race";
  status: string;
  reason_code: string | null;
  signals: Array<{ target: "supervisor" | "command_group"; pid: number; signal: string; at: number }>;
  /** Recorded pids li would not signal for want of identity (§18), one line each, for the person who ran li kill. */
  notes: string[];
  transition: AppliedTransition | null;
}

export interface KillDeps {
  env?: SweepEnv;
  /** Wall clock for the grace wait and evidence (Unix seconds). */
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
  pollMs?: number;
  /** §9.4: the process that applied a terminal transition pushes its handlers (the CLI passes notify's pushTerminal). */
  pushTerminal?: (ledger: Ledger, event: AppliedTransition) => Promise<unknown>;
}

/** The kinds whose ids name a session li kill can stop: a branch or a run id names its owning session. */
const KILL_LOOKUP: readonly LookupKind[] = ["session", "branch", "run"];

async function findSession(ledger: Ledger, input: string): Promise<RunningSession> {
  const id = input.trim();
  if (!id) throw new UsageError("li kill: a session id is required");
  const r = await resolveIn(ledger.backend.reads, id, KILL_LOOKUP);
  if ("ambiguous" in r) throw new UsageError(ambiguityMessage(id, r.ambiguous));
  const found = "found" in r ? await ledger.backend.getSweepSession(r.found.id) : null;
  if (!found) throw new UnknownIdError(id);
  return found;
}

export async function killSession(ledger: Ledger, input: string, options: KillOptions = KILL_DEFAULTS, deps: KillDeps = {}): Promise<KillResult> {
  if (!Number.isFinite(options.graceSeconds) || options.graceSeconds < 0) throw new UsageError(`--grace: ${options.graceSeconds} is not a number of seconds`);
  const env = deps.env ?? hostEnv();
  const now = deps.now ?? ledger.now;
  const sleep = deps.sleep ?? ((ms: number) => Bun.sleep(ms));
  const session = await findSession(ledger, input);
  if (session.status !== "running") throw new KillRefusedError(`session ${session.id} is already ${session.status}`);

  const j = judgeSession(session, now(), env);
  const signals: KillResult["signals"] = [];
  const base = { session_id: session.id, signals, notes: identityNotes(j.currentLeg) };
  const summary = options.reason ? `li kill: ${options.reason}` : "li kill";

  const finish = async (outcome: JudgedWriteOutcome, action: "force_killed" | "written"): Promise<KillResult> => {
    if (outcome.result === "applied") {
      // The one place li kill pushes the notice of what it wrote (§9.4).
      await deps.pushTerminal?.(ledger, outcome.transition);
      return { ...base, action, status: outcome.transition.status, reason_code: outcome.transition.reasonCode, transition: outcome.transition };
    }
    return lostRace(ledger, base);
  };

  const liveness = j.liveness;
  if (!liveness || liveness.evidence.basis === "none") {
    // No markers: nothing to signal.
    return finish(await writeDirect(ledger, env, j, now(), summary, []), "written");
  }
  const leg = j.currentLeg!;
  if (liveness.remote) return killRemote(ledger, session, leg, options, { now, sleep, pollMs: deps.pollMs ?? 50 }, base);
  if (liveness.supervisor !== "alive") {
    // Dead, reused or unverified (no start ticks to match): that pid is never signalled. The orphaned command dies if it is still the same process.
    const at = now();
    const killed = killOrphanCommand(j, env, at);
    if (killed?.pgid !== undefined) signals.push({ target: "command_group", pid: killed.pgid, signal: "SIGKILL", at });
    return finish(await writeDirect(ledger, env, j, now(), summary, killed ? [killed] : []), "written");
  }

  // Alive: record the request, so the leg's own teardown writes manual_kill rather than sigterm.
  if (!(await recordKillRequest(ledger, session.id, leg.id, now))) return lostRace(ledger, base);
  // Alive by its heartbeat alone (no usable pid recorded): there is nothing to signal, only the request and the grace.
  const supervisorPid = liveness.evidence.pid;
  if (supervisorPid !== null && env.probe(supervisorPid, leg.pid_start_ticks) === "alive" && env.signalProcess(supervisorPid, "SIGTERM")) {
    signals.push({ target: "supervisor", pid: supervisorPid, signal: "SIGTERM", at: now() });
  }

  // The decision rests on the session's status, not the process: a leg running its handlers is done.
  const ended = await awaitTerminal(ledger, session.id, options.graceSeconds, { now, sleep, pollMs: deps.pollMs ?? 50 });
  if (ended) return { ...base, action: "terminated", ...rowOutcome(ended.row), transition: null };

  const at = now();
  if (supervisorPid !== null && env.probe(supervisorPid, leg.pid_start_ticks) === "alive" && env.signalProcess(supervisorPid, "SIGKILL")) {
    signals.push({ target: "supervisor", pid: supervisorPid, signal: "SIGKILL", at });
  }
  const cmd = liveness.evidence;
  if (cmd.commandPid != null && cmd.commandStartTicks != null && env.probe(cmd.commandPid, cmd.commandStartTicks) === "alive" && env.signalGroup(cmd.commandPid, "SIGKILL")) {
    signals.push({ target: "command_group", pid: cmd.commandPid, signal: "SIGKILL", at });
  }
  // Whatever of the leg left the command's group or session (§8.7) goes with it.
  const rest = env.killLeg?.(leg) ?? null;
  const outcome = await writeJudged(ledger, env, j, {
    status: "cancelled",
    reasonCode: "run.cancelled.force_kill",
    reasonSummary: `${summary}: still running ${options.graceSeconds}s after SIGTERM`,
    evidence: [livenessEvidence(j), { kind: "force_kill", grace_seconds: options.graceSeconds, signals, ...(rest ? { leg_processes: rest } : {}) }],
    source: "admin",
    actor: "li.kill",
    endedAt: at,
    // The leg kept heartbeating while it was asked to stop; only its identity must still hold.
    checkHeartbeat: false,
  });
  return finish(outcome, "force_killed");
}

interface Waiting {
  now: () => number;
  sleep: (ms: number) => Promise<void>;
  pollMs: number;
}

/** The kill request on the session's current leg (bookkeeping, never a status write); false when the session moved on first. */
async function recordKillRequest(ledger: Ledger, sessionId: string, legId: string, now: () => number): Promise<boolean> {
  return ledger.transact(async (tx) => {
    if ((await guardConflict(tx, sessionId, { currentLegId: legId })) !== null) return false;
    return (await tx.updateLeg(legId, { kill_requested_at: now() }, { onlyOpen: true })) === 1;
  });
}

/** The session once it is no longer running (its row, null when gone), polled up to the grace; null while it still runs. */
async function awaitTerminal(ledger: Ledger, sessionId: string, graceSeconds: number, w: Waiting): Promise<{ row: EntityRow | null } | null> {
  const deadline = w.now() + graceSeconds;
  for (;;) {
    const row = await ledger.backend.getEntity("session", sessionId);
    if (!row || row.status !== "running") return { row };
    if (w.now() >= deadline) return null;
    await w.sleep(Math.min(w.pollMs, Math.max(1, (deadline - w.now()) * 1000)));
  }
}

/** A leg's host as people read it: the recorded name beside the id. */
function hostText(leg: LegRow): string {
  return leg.host_name ? `${leg.host_name} (${leg.host_id ?? "no host id"})` : (leg.host_id ?? "an unrecorded host");
}

/**
 * A leg of another host (§12.2): its pids mean nothing here, so li records the kill request and lets the
 * leg's own supervisor act on it (it learns it through the backend's notice, or at its next heartbeat),
 * then waits up to the grace for the session to become terminal. A backend that cannot reach another
 * host's supervisor (SQLite) refuses instead. A dead remote supervisor is the reaper's, by heartbeat.
 */
async function killRemote(ledger: Ledger, session: RunningSession, leg: LegRow, options: KillOptions, w: Waiting, base: Pick<KillResult, "session_id" | "signals" | "notes">): Promise<KillResult> {
  if (!ledger.backend.onKillRequest) {
    throw new KillRefusedError(`session ${session.id}: its leg runs on host ${hostText(leg)}; this ledger cannot reach another host's supervisor, so run li kill there`);
  }
  if (!(await recordKillRequest(ledger, session.id, leg.id, w.now))) return lostRace(ledger, base);
  const ended = await awaitTerminal(ledger, session.id, options.graceSeconds, w);
  if (ended) return { ...base, action: "terminated", ...rowOutcome(ended.row), transition: null };
  throw new KillRefusedError(
    `session ${session.id}: the remote leg on host ${hostText(leg)} did not stop yet (still running ${options.graceSeconds}s after the kill request); its supervisor acts on the recorded request, or the reaper takes it once its heartbeat is stale`,
  );
}

function writeDirect(ledger: Ledger, env: SweepEnv, j: Judgement, at: number, summary: string, killed: Record<string, unknown>[]): Promise<JudgedWriteOutcome> {
  return writeJudged(ledger, env, j, {
    status: "cancelled",
    reasonCode: "run.cancelled.manual_kill",
    reasonSummary: summary,
    evidence: [livenessEvidence(j), ...killed],
    source: "admin",
    actor: "li.kill",
    endedAt: at,
  });
}

/** One line per recorded pid that has no identity li could match (§12.1, §18): such a pid is never signalled. */
function identityNotes(leg: LegRow | null): string[] {
  if (!leg) return [];
  const recorded = [
    ["supervisor", leg.pid, leg.pid_start_ticks],
    ["command", leg.command_pid, leg.command_start_ticks],
  ] as const;
  const notes: string[] = [];
  for (const [what, pid, ticks] of recorded) {
    if (pid === null) continue;
    if (!isUsablePid(pid)) notes.push(`the recorded ${what} pid ${pid} is not a valid process id; it was not signalled`);
    else if (ticks === null) notes.push(`the recorded ${what} pid ${pid} has no start ticks to match; it was not signalled`);
  }
  return notes;
}

/** Someone else (the leg, a resume, a sweep) wrote first: report the winner. */
async function lostRace(ledger: Ledger, base: Pick<KillResult, "session_id" | "signals" | "notes">): Promise<KillResult> {
  return { ...base, action: "lost_race", ...rowOutcome(await ledger.backend.getEntity("session", base.session_id)), transition: null };
}

/** The session as its row stands now, for a result li kill did not write itself. */
function rowOutcome(row: EntityRow | null): Pick<KillResult, "status" | "reason_code"> {
  return { status: row?.status ?? "unknown", reason_code: (row?.status_reason_code as string | null) ?? null };
}
