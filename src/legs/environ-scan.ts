// Finds a leg's processes by the LI_LEG_RUN_ID in their environment: the fallback containment (SPEC §8.7), and the reaper's way to a command no marker names.

import fs from "node:fs";
import path from "node:path";
import { LEG_RUN_ID_ENV } from "./env.ts";
import { holdsEntry, processesOf } from "../host/environ.ts";
import { PROC_ROOT, readProcStat } from "../host/proc.ts";

/** USER_HZ, the unit of /proc start times: 100 on every Linux architecture li is built for. */
const CLOCK_TICKS_PER_SECOND = 100;
/** btime in /proc/stat is whole seconds: a start time can only be placed to within one second. */
const BOOT_TIME_SLACK_SECONDS = 1;
/** At most this many processes are reported (and so signalled) for one leg. */
const MAX_FOUND = 64;

/** A process of the leg's command: its pid, the group it is in, and its identity for the re-check before a signal. */
export interface FoundProcess {
  pid: number;
  pgid: number;
  startTicks: number;
}

/** The leg the command belongs to: its run id, and the earliest a process of it can have started. */
export interface LegToFind {
  runId: string;
  /** The supervisor's start ticks: li spawned the command, so nothing of it started before li did. */
  supervisorStartTicks: number | null;
  /** The leg's start (Unix seconds). */
  startedAt: number | null;
}

export interface FindOptions {
  procRoot?: string;
  /** Only processes of this user are looked at (their environment is readable only to them); default ours. */
  uid?: number;
  /** Never reported: the process that looks (it may itself run inside the leg's command). */
  selfPid?: number;
}

function bootTimeSeconds(procRoot: string): number | null {
  try {
    const match = /^btime\s+(\d+)$/m.exec(fs.readFileSync(path.join(procRoot, "stat"), "utf8"));
    return match ? Number(match[1]) : null;
  } catch {
    return null;
  }
}

/**
 * The earliest start (in ticks since boot) a process of the leg may have: at or after the supervisor's
 * start and at or after the leg's start (less the second /proc cannot resolve). null: no bound is known,
 * so nothing may be claimed as the leg's.
 */
export function earliestStartTicks(leg: LegToFind, procRoot: string = PROC_ROOT): number | null {
  const bounds: number[] = [];
  if (leg.supervisorStartTicks !== null && Number.isSafeInteger(leg.supervisorStartTicks) && leg.supervisorStartTicks >= 0) bounds.push(leg.supervisorStartTicks);
  const btime = leg.startedAt !== null && Number.isFinite(leg.startedAt) ? bootTimeSeconds(procRoot) : null;
  if (btime !== null && leg.startedAt !== null) bounds.push(Math.floor((leg.startedAt - btime - BOOT_TIME_SLACK_SECONDS) * CLOCK_TICKS_PER_SECOND));
  return bounds.length === 0 ? null : Math.max(...bounds);
}

/**
 * The running processes of this user whose environment carries `LI_LEG_RUN_ID=<run id>` and that
 * started no earlier than the leg: the command li spawned (and whatever it started). Positive evidence
 * only: without a start bound, or for a process whose identity cannot be read, nothing is reported.
 */
export function findLegCommand(leg: LegToFind, options: FindOptions = {}): FoundProcess[] {
  const procRoot = options.procRoot ?? PROC_ROOT;
  const uid = options.uid ?? process.getuid?.() ?? -1;
  const selfPid = options.selfPid ?? process.pid;
  const notBefore = earliestStartTicks(leg, procRoot);
  if (notBefore === null || leg.runId === "") return [];
  const entry = Buffer.from(`${LEG_RUN_ID_ENV}=${leg.runId}`);
  const selfGroup = readProcStat(selfPid, procRoot)?.pgid ?? null;
  const found: FoundProcess[] = [];
  for (const seen of processesOf(uid, procRoot, selfPid)) {
    const { pid } = seen;
    const { pgid, startTicks } = seen.stat;
    if (startTicks < notBefore || pgid === selfGroup) continue;
    const environ = seen.environ();
    if (!environ || !holdsEntry(environ, entry)) continue;
    found.push({ pid, pgid, startTicks });
    if (found.length >= MAX_FOUND) break;
  }
  return found;
}
