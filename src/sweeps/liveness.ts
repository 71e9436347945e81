// The one liveness classifier (SPEC §12.1): judges a leg from its markers on positive evidence only; pure, the probe is injected.

import { isUsablePid, type ProbeResult } from "../host/proc.ts";

export type { ProbeResult } from "../host/proc.ts";

/** Default staleness grace for a heartbeat seen from another host (the heartbeat period is 15 s). */
export const DEFAULT_HEARTBEAT_GRACE_SECONDS = 600;

/** Asks whether the process recorded as (pid, start ticks) still runs on this host. */
export type Probe = (pid: number, startTicks: number | null) => ProbeResult;

export type Verdict = "alive" | "dead" | "unknown";

/** What a leg recorded about itself (SPEC §8.5); times are Unix seconds. Any may be missing. */
export interface LegMarkers {
  hostId: string | null;
  pid: number | null;
  pidStartTicks: number | null;
  commandPid: number | null;
  commandStartTicks: number | null;
  startedAt: number | null;
  heartbeatAt: number | null;
  endedAt: number | null;
}

export interface LivenessOptions {
  /** Seconds after its last heartbeat (or start) before a leg of another host counts as dead. */
  heartbeatGrace?: number;
  /**
   * Unix seconds since when the judging process has had the ledger (§17): after an outage, a heartbeat
   * that could not be written is not held against the leg, so ages count from the later of the two.
   */
  reachableSince?: number | null;
}

export interface LivenessInput {
  markers: LegMarkers;
  /** This host's id (machine id + boot id). */
  hostId: string;
  /** Unix seconds. */
  now: number;
  probe: Probe;
  options?: LivenessOptions;
}

/** How the supervisor was judged: by probing its pid here, by heartbeat age, or not at all. */
export type LivenessBasis = "probe" | "heartbeat" | "none";

/** What the classifier saw, for a sweep's transition evidence. */
export interface LivenessEvidence {
  basis: LivenessBasis;
  legHostId: string | null;
  localHostId: string;
  pid: number | null;
  pidStartTicks: number | null;
  supervisorProbe: ProbeResult | null;
  commandPid: number | null;
  commandStartTicks: number | null;
  commandProbe: ProbeResult | null;
  startedAt: number | null;
  heartbeatAt: number | null;
  endedAt: number | null;
  /** The later of start and heartbeat: the last sign of life the age is measured from. */
  lastSeenAt: number | null;
  heartbeatGrace: number;
}

export interface Liveness {
  supervisor: Verdict;
  command: Verdict;
  /** The leg's host is not (or cannot be confirmed to be) this one: its pids must not be probed or signalled. */
  remote: boolean;
  /** Seconds since the last sign of life; null when the leg recorded no time at all. */
  ageSeconds: number | null;
  evidence: LivenessEvidence;
}


function usableTicks(ticks: number | null): number | null {
  return ticks !== null && Number.isSafeInteger(ticks) && ticks >= 0 ? ticks : null;
}

function finiteOrNull(value: number | null): number | null {
  return value !== null && Number.isFinite(value) ? value : null;
}

/** "unverified" (a process has the pid, nothing proves it is ours) is neither alive nor dead: unknown, never signalled. */
function fromProbe(result: ProbeResult): Verdict {
  return result === "alive" ? "alive" : result === "unverified" ? "unknown" : "dead";
}

function resolveGrace(options: LivenessOptions | undefined): number {
  const grace = options?.heartbeatGrace ?? DEFAULT_HEARTBEAT_GRACE_SECONDS;
  if (!Number.isFinite(grace) || grace < 0) {
    throw new RangeError(`heartbeatGrace: ${grace} is not a non-negative number of seconds`);
  }
  return grace;
}

/** Seconds since `since`, never negative: a clock ahead on another host must not make a leg younger than new. */
function secondsSince(since: number, now: number): number {
  return Math.max(0, now - since);
}

/** Judges one leg (SPEC §12.1). Same host: by probing its pids. Other host: by heartbeat age only. */
export function classifyLeg(input: LivenessInput): Liveness {
  const { markers, hostId, now, probe } = input;
  const heartbeatGrace = resolveGrace(input.options);
  const pid = isUsablePid(markers.pid) ? markers.pid : null;
  const commandPid = isUsablePid(markers.commandPid) ? markers.commandPid : null;
  const pidStartTicks = usableTicks(markers.pidStartTicks);
  const commandStartTicks = usableTicks(markers.commandStartTicks);
  const startedAt = finiteOrNull(markers.startedAt);
  const heartbeatAt = finiteOrNull(markers.heartbeatAt);
  const endedAt = finiteOrNull(markers.endedAt);

  const lastSeenAt = heartbeatAt === null ? startedAt : startedAt === null ? heartbeatAt : Math.max(startedAt, heartbeatAt);
  const since = finiteOrNull(input.options?.reachableSince ?? null);
  const ageSeconds = lastSeenAt === null ? null : secondsSince(since === null ? lastSeenAt : Math.max(lastSeenAt, since), now);
  const hasMarkers = pid !== null || heartbeatAt !== null;
  // A pid is only meaningful on the host that recorded it; a pid with no host id cannot be trusted here.
  const local = markers.hostId !== null && markers.hostId === hostId;
  const remote = hasMarkers && !local;

  let supervisor: Verdict = "unknown";
  let command: Verdict = "unknown";
  let supervisorProbe: ProbeResult | null = null;
  let commandProbe: ProbeResult | null = null;
  let basis: LivenessBasis = "none";

  if (local && pid !== null) {
    supervisorProbe = probe(pid, pidStartTicks);
    supervisor = fromProbe(supervisorProbe);
    basis = "probe";
  } else if (hasMarkers && ageSeconds !== null) {
    supervisor = ageSeconds > heartbeatGrace ? "dead" : "alive";
    basis = "heartbeat";
  }
  if (local && commandPid !== null) {
    commandProbe = probe(commandPid, commandStartTicks);
    command = fromProbe(commandProbe);
  }

  return {
    supervisor,
    command,
    remote,
    ageSeconds,
    evidence: {
      basis,
      legHostId: markers.hostId,
      localHostId: hostId,
      pid,
      pidStartTicks,
      supervisorProbe,
      commandPid,
      commandStartTicks,
      commandProbe,
      startedAt,
      heartbeatAt,
      endedAt,
      lastSeenAt,
      heartbeatGrace,
    },
  };
}

/**
 * Age of a session that has no leg or no markers: from its last update, never from its start
 * (a resumed session keeps its old `started_at`).
 */
export function sessionAgeWithoutLeg(updatedAt: number, now: number): number {
  return secondsSince(updatedAt, now);
}
