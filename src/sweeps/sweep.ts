// The shape every sweep shares (STYLE habit 5): validated options, `runOnce(ledger, now, options)` → a summary; and the host it runs on.

import type { Awaitable } from "../util/awaitable.ts";
import type { Ledger } from "../ledger/ledger.ts";
import { hostId, killGroup, probeProcess } from "../host/proc.ts";
import type { z } from "zod";
import { UsageError } from "../util/errors.ts";
import type { Probe } from "./liveness.ts";
import { findLegCommand, type FoundProcess, type LegToFind } from "../legs/environ-scan.ts";
import { legProcessesOf } from "../legs/leg-processes.ts";
import { removeEmptyLegCgroups } from "../legs/cgroup.ts";

/** An empty leg cgroup this old is left over (a leg makes and enters its own within milliseconds). */
const EMPTY_CGROUP_AGE_SECONDS = 60;
import type { LegRow } from "../ledger/rows.ts";

/** Test seams of a sweep: run between its decision and its write (e.g. to land a heartbeat there). */
export interface SweepHooks {
  beforeWrite?(sessionId: string): Awaitable<void>;
}

/** What a sweep killed of a leg by its containment (cgroup, environ or group). */
export interface KilledLeg {
  containment: string;
  pids: number[];
}

/** What a sweep needs of the machine it runs on; injectable so tests control identity and signals. */
export interface SweepEnv {
  /** This host's id (machine id + boot id): pids of other hosts are never probed or signalled. */
  hostId: string;
  probe: Probe;
  /** Signals a whole process group; false when the group is gone. */
  signalGroup(pgid: number, signal: NodeJS.Signals): boolean;
  /** Signals one process; false when it is gone. */
  signalProcess(pid: number, signal: NodeJS.Signals): boolean;
  /** The processes of a leg whose command no marker names, found by LI_LEG_RUN_ID (absent: never looked for). */
  findLegCommand?(leg: LegToFind): FoundProcess[];
  /** SIGKILL to every process of a leg of this host by its containment (§8.7); null when none was left (absent: never looked for). */
  killLeg?(leg: LegRow): KilledLeg | null;
  /** Removes the empty leg cgroups of this host older than a minute (absent: never). */
  removeEmptyLegCgroups?(): void;
  hooks?: SweepHooks;
  /**
   * Unix seconds (the ledger's clock) since when this process has had the ledger without failing (§17):
   * set by the watcher after an outage, so no leg is judged by heartbeats it could not write.
   */
  reachableSince?: number | null;
}

/** The leg's processes found by its recorded containment, each verified before the signal; its emptied cgroup is removed. */
function killLeg(leg: LegRow): KilledLeg | null {
  const processes = legProcessesOf(leg);
  const found = processes.list();
  if (found.length === 0) {
    processes.release();
    return null;
  }
  processes.signal("SIGKILL");
  return { containment: processes.containment, pids: found.map((p) => p.pid) };
}

function signalProcess(pid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(pid, signal);
    return true;
  } catch (error) {
    if ((error as { code?: string }).code === "ESRCH") return false;
    throw error;
  }
}

/** The real machine: /proc probes and kill(2). */
export function hostEnv(overrides: Partial<SweepEnv> = {}): SweepEnv {
  return {
    hostId: overrides.hostId ?? hostId(),
    probe: overrides.probe ?? ((pid, ticks) => probeProcess(pid, ticks)),
    signalGroup: overrides.signalGroup ?? ((pgid, signal) => killGroup(pgid, signal)),
    signalProcess: overrides.signalProcess ?? signalProcess,
    findLegCommand: overrides.findLegCommand ?? ((leg) => findLegCommand(leg)),
    killLeg: overrides.killLeg ?? killLeg,
    removeEmptyLegCgroups: overrides.removeEmptyLegCgroups ?? (() => void removeEmptyLegCgroups(EMPTY_CGROUP_AGE_SECONDS)),
    ...(overrides.hooks ? { hooks: overrides.hooks } : {}),
  };
}

/**
 * A sweep: `validate` turns loose input (flags, settings) into options or throws a UsageError naming
 * the option; `runOnce` does one pass at `now` and returns what it changed. The CLI and the watcher
 * call the same `runOnce`.
 */
export interface Sweep<Options, Summary> {
  readonly name: string;
  readonly defaults: Readonly<Options>;
  validate(input: Partial<Options>): Options;
  runOnce(ledger: Ledger, now: number, options: Options, env?: SweepEnv): Promise<Summary>;
}

/** Parses options with `schema`; the first problem becomes a UsageError naming the flag (from `flags`). */
export function validateWith<T>(s: z.ZodType<T>, input: unknown, flags: Record<string, string>): T {
  const parsed = s.safeParse(input);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const key = String(issue.path[0] ?? "options");
  throw new UsageError(`${flags[key] ?? key}: ${issue.message}`);
}
