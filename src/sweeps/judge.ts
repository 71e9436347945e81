// Judges one running session for a sweep (SPEC §12.1): every open leg through the one classifier, aged from its current leg.

import { LINKED_HOLD_REASON } from "../legs/linked-outcome.ts";
import type { LegRow, RunningSession } from "../ledger/rows.ts";
import { classifyLeg, sessionAgeWithoutLeg, type LegMarkers, type Liveness, type LivenessEvidence } from "./liveness.ts";
import type { KilledLeg, SweepEnv } from "./sweep.ts";
import type { LegToFind } from "../legs/environ-scan.ts";
import { LEG_RUN_ID_ENV } from "../legs/env.ts";

/** alive: some open leg lives (or a running linked session holds it); dead: positively gone; unknown: no markers. */
export type SessionState = "alive" | "dead" | "unknown";

export interface Judgement {
  session: RunningSession;
  currentLeg: LegRow | null;
  /** The values the write re-checks inside its transaction. */
  guard: { currentLegId: string | null; heartbeatAt: number | null };
  state: SessionState;
  /** The current leg belongs to another host: its pids are never probed nor signalled from here. */
  remote: boolean;
  /** Held running by a running linked session (§8.2 step 5): alive whatever its supervisor. */
  heldByLinked: boolean;
  /** Seconds since the last sign of life: the current leg's start or heartbeat, or the row's update. */
  ageSeconds: number;
  liveness: Liveness | null;
  /** The command of the current leg, alive here while its supervisor is dead: nobody will record its outcome. */
  orphanCommand: { pid: number; startTicks: number } | null;
  /**
   * The current leg's supervisor is dead here and recorded no command markers (killed between the spawn
   * and writing them): its command, if it runs, can only be found by its LI_LEG_RUN_ID.
   */
  unnamedCommand: LegToFind | null;
  /** Legs the write closes with the session. */
  openLegIds: string[];
}

/** A leg row's liveness markers, as the one classifier reads them. */
export function markersOf(leg: LegRow): LegMarkers {
  return {
    hostId: leg.host_id,
    pid: leg.pid,
    pidStartTicks: leg.pid_start_ticks,
    commandPid: leg.command_pid,
    commandStartTicks: leg.command_start_ticks,
    startedAt: leg.started_at,
    heartbeatAt: leg.heartbeat_at,
    endedAt: leg.ended_at,
  };
}


export interface JudgeOptions {
  heartbeatGrace?: number;
  /** Since when the judging process has had the ledger (§17): no age counts from before it. */
  reachableSince?: number | null;
}

export function judgeSession(session: RunningSession, now: number, env: Pick<SweepEnv, "hostId" | "probe">, options: JudgeOptions = {}): Judgement {
  const classify = (leg: LegRow) =>
    classifyLeg({
      markers: markersOf(leg),
      hostId: env.hostId,
      now,
      probe: env.probe,
      options: { ...(options.heartbeatGrace === undefined ? {} : { heartbeatGrace: options.heartbeatGrace }), ...(options.reachableSince == null ? {} : { reachableSince: options.reachableSince }) },
    });
  const currentLeg = session.legs.find((l) => l.id === session.current_leg_id) ?? null;
  const liveness = currentLeg ? classify(currentLeg) : null;
  // A session with any live unended leg is alive (a resume racing an older leg that still runs).
  const otherAlive = session.legs.some((l) => l !== currentLeg && l.ended_at === null && classify(l).supervisor === "alive");
  // Held by its linked session (§8.2 step 5): alive while that one runs, and also once it has ended but
  // the hold is still in place — the linked finalizer, not the reaper, gives it the linked outcome. The
  // finalizer only takes a hold whose current leg closed its row; a later leg (a resume) that died
  // unended is the reaper's once the linked session has ended, or nobody would ever write it.
  const heldByLinked =
    session.linked_session_id !== null &&
    (session.linked_status === "running" ||
      (session.linked_status !== null && session.status_reason_code === LINKED_HOLD_REASON && currentLeg !== null && currentLeg.ended_at !== null));

  let state: SessionState;
  if (heldByLinked || otherAlive || liveness?.supervisor === "alive") state = "alive";
  else if (liveness && liveness.evidence.basis !== "none" && liveness.supervisor === "dead") state = "dead";
  // No markers, or a pid whose identity cannot be verified (no start ticks): only the age rules act on it.
  else state = "unknown";

  // Never from started_at: a resumed session keeps its first start (ADR-0105).
  const lastSeen = Math.max(liveness?.evidence.lastSeenAt ?? -Infinity, session.updated_at, options.reachableSince ?? -Infinity);
  const ageSeconds = liveness ? Math.max(0, now - lastSeen) : sessionAgeWithoutLeg(session.updated_at, now);

  const commandMarkers = liveness?.evidence;
  const orphanCommand =
    liveness && !liveness.remote && liveness.supervisor === "dead" && liveness.command === "alive" && commandMarkers?.commandPid != null && commandMarkers.commandStartTicks != null
      ? { pid: commandMarkers.commandPid, startTicks: commandMarkers.commandStartTicks }
      : null;

  const unnamedCommand: LegToFind | null =
    liveness && currentLeg && !liveness.remote && liveness.supervisor === "dead" && liveness.evidence.basis === "probe" && liveness.evidence.commandPid === null && currentLeg.run_id
      ? { runId: currentLeg.run_id, supervisorStartTicks: liveness.evidence.pidStartTicks, startedAt: liveness.evidence.startedAt }
      : null;

  return {
    session,
    currentLeg,
    guard: { currentLegId: session.current_leg_id, heartbeatAt: currentLeg?.heartbeat_at ?? null },
    state,
    remote: liveness?.remote ?? false,
    heldByLinked,
    ageSeconds,
    liveness,
    orphanCommand,
    unnamedCommand,
    openLegIds: session.legs.filter((l) => l.ended_at === null).map((l) => l.id),
  };
}

/** What a sweep saw, as a transition evidence entry. */
export function livenessEvidence(j: Judgement): Record<string, unknown> {
  const e: Partial<LivenessEvidence> = j.liveness?.evidence ?? {};
  return {
    kind: "liveness",
    leg_id: j.currentLeg?.id ?? null,
    state: j.state,
    basis: e.basis ?? "none",
    host_id: e.legHostId ?? null,
    local_host_id: e.localHostId ?? null,
    pid: e.pid ?? null,
    pid_start_ticks: e.pidStartTicks ?? null,
    supervisor: e.supervisorProbe ?? (j.liveness?.supervisor ?? null),
    command_pid: e.commandPid ?? null,
    command_start_ticks: e.commandStartTicks ?? null,
    command: e.commandProbe ?? (j.liveness?.command ?? null),
    heartbeat_at: e.heartbeatAt ?? null,
    age_seconds: Math.round(j.ageSeconds * 1000) / 1000,
  };
}

/** What a sweep killed, as a transition evidence entry. */
export interface KilledEvidence {
  [key: string]: unknown;
  kind: "killed";
  /** command_group: the command's group (and the rest of the leg); leg_processes: only processes that had left it. */
  what: "command_group" | "leg_processes";
  pgid?: number;
  start_ticks?: number;
  signal: "SIGKILL";
  at: number;
  /** Set when no marker named the command: how it was found, and every group and process killed. */
  found_by?: string;
  /** Every process of the leg killed by its containment (§8.7): those that left the group or the session too. */
  leg_processes?: KilledLeg;
}


/**
 * Kills the orphaned command's group when its identity still matches (probed again right before
 * the signal). A command no marker names is looked for by its LI_LEG_RUN_ID instead (see
 * unnamed-command.ts). Returns the evidence entry, or null when nothing was killed.
 */
export function killOrphanCommand(j: Judgement, env: SweepEnv, at: number): KilledEvidence | null {
  const command = killCommandGroup(j, env, at);
  // Then the rest of the leg, whatever left the command's group or session (§8.7): never on another host.
  const rest = j.currentLeg && !j.remote && j.liveness?.supervisor !== "alive" ? (env.killLeg?.(j.currentLeg) ?? null) : null;
  if (!rest) return command;
  return command ? { ...command, leg_processes: rest } : { kind: "killed", what: "leg_processes", signal: "SIGKILL", at, leg_processes: rest };
}

function killCommandGroup(j: Judgement, env: SweepEnv, at: number): KilledEvidence | null {
  const orphan = j.orphanCommand;
  if (!orphan) return j.unnamedCommand ? killUnnamedCommand(j.unnamedCommand, env, at) : null;
  if (env.probe(orphan.pid, orphan.startTicks) !== "alive") return null;
  const delivered = env.signalGroup(orphan.pid, "SIGKILL");
  return delivered ? { kind: "killed", what: "command_group", pgid: orphan.pid, start_ticks: orphan.startTicks, signal: "SIGKILL", at } : null;
}

/**
 * The leg's command found by its environment: each group it leads is killed whole, and a process of it
 * outside such a group alone. Every pid is probed (alive, same start ticks) right before its signal.
 */
function killUnnamedCommand(leg: LegToFind, env: SweepEnv, at: number): KilledEvidence | null {
  const found = env.findLegCommand?.(leg) ?? [];
  const leaders = found.filter((p) => p.pid === p.pgid);
  const led = new Set(leaders.map((p) => p.pgid));
  const groups: Array<{ pgid: number; start_ticks: number }> = [];
  const processes: Array<{ pid: number; start_ticks: number }> = [];
  for (const p of leaders) {
    if (p.pid > 1 && env.probe(p.pid, p.startTicks) === "alive" && env.signalGroup(p.pid, "SIGKILL")) groups.push({ pgid: p.pid, start_ticks: p.startTicks });
  }
  for (const p of found) {
    if (led.has(p.pgid) || p.pid <= 1) continue;
    if (env.probe(p.pid, p.startTicks) === "alive" && env.signalProcess(p.pid, "SIGKILL")) processes.push({ pid: p.pid, start_ticks: p.startTicks });
  }
  const first = groups[0] ?? (processes[0] ? { pgid: processes[0].pid, start_ticks: processes[0].start_ticks } : null);
  if (!first) return null;
  return { kind: "killed", what: "command_group", pgid: first.pgid, start_ticks: first.start_ticks, signal: "SIGKILL", at, found_by: `environ:${LEG_RUN_ID_ENV}`, run_id: leg.runId, groups, processes };
}
