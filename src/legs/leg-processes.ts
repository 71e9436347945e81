// The processes of one leg (SPEC §8.7): found by its cgroup, or by the LI_LEG_RUN_ID they inherit, or by
// its process group; listed, signalled and waited for until gone. Every path that stops a leg goes here.

import fs from "node:fs";
import path from "node:path";
import { cgroupPids, cgroupUsage, killCgroup, LegCgroup, removeCgroup, type CgroupHost, type CgroupUsage } from "./cgroup.ts";
import { PROC_ROOT, probeProcess, readProcStat, type SignalSender } from "../host/proc.ts";
import { earliestStartTicks, findLegCommand } from "./environ-scan.ts";

/** How a leg's processes are found, the strongest first; the leg's evidence names the one that held. */
export const CONTAINMENTS = ["cgroup", "environ", "group"] as const;
export type Containment = (typeof CONTAINMENTS)[number];

/** At most this many processes are listed (and so signalled one by one) for one leg. */
export const MAX_LEG_PROCESSES = 64;
/** A listed command line is cut here. */
const MAX_COMMAND_CHARS = 200;

/** What identifies a leg's processes; recorded on the leg, so a sweep on the same host finds them after the supervisor died. */
export interface LegScope {
  containment: Containment;
  /** The leg's cgroup directory (containment "cgroup"). */
  cgroup: string | null;
  runId: string;
  /** The supervisor's start ticks and the leg's start: nothing of the leg started before both. */
  supervisorStartTicks: number | null;
  startedAt: number | null;
  /** The command's pid, which leads its process group. */
  commandPid: number | null;
}

export interface LegProcess {
  pid: number;
  startTicks: number;
  /** The process group it was in when listed. */
  pgid: number;
}

export interface LegProcessesOptions {
  procRoot?: string;
  sendSignal?: SignalSender;
  /** Never listed nor signalled: the process that looks (a supervisor that was in the cgroup for its spawn). */
  selfPid?: number;
}

/** A leftover process as the evidence lists it. */
export interface ListedProcess {
  pid: number;
  command: string;
}

function errorCode(error: unknown): string | undefined {
  return typeof error === "object" && error !== null && "code" in error ? String(error.code) : undefined;
}

/** The command line of a process, NULs as spaces, bounded; "" when it cannot be read. */
export function commandLineOf(pid: number, procRoot: string = PROC_ROOT): string {
  try {
    const fd = fs.openSync(path.join(procRoot, String(pid), "cmdline"), "r");
    try {
      const buf = Buffer.alloc(MAX_COMMAND_CHARS * 4);
      const n = fs.readSync(fd, buf, 0, buf.length, 0);
      const text = buf.subarray(0, n).toString("utf8").replace(/\0+$/, "").replace(/\0/g, " ");
      return text.length > MAX_COMMAND_CHARS ? `${text.slice(0, MAX_COMMAND_CHARS)}…` : text;
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    return "";
  }
}

export class LegProcesses {
  private readonly procRoot: string;
  private readonly sendSignal: SignalSender;
  private readonly selfPid: number;

  constructor(
    readonly scope: LegScope,
    options: LegProcessesOptions = {},
  ) {
    this.procRoot = options.procRoot ?? PROC_ROOT;
    this.sendSignal = options.sendSignal ?? process.kill.bind(process);
    this.selfPid = options.selfPid ?? process.pid;
  }

  get containment(): Containment {
    return this.scope.containment;
  }

  /** The live processes of the leg now (zombies are gone), at most MAX_LEG_PROCESSES. */
  list(): LegProcess[] {
    const s = this.scope;
    if (s.containment === "cgroup" && s.cgroup) return this.live(cgroupPids(s.cgroup));
    const found = new Map<number, LegProcess>();
    if (s.containment === "environ") {
      const leg = { runId: s.runId, supervisorStartTicks: s.supervisorStartTicks, startedAt: s.startedAt };
      for (const p of findLegCommand(leg, { procRoot: this.procRoot, selfPid: this.selfPid })) found.set(p.pid, { pid: p.pid, startTicks: p.startTicks, pgid: p.pgid });
    }
    // The command's own group as well: a process that cleared its environment but stayed in the group is still found.
    for (const p of this.groupMembers()) if (found.size < MAX_LEG_PROCESSES) found.set(p.pid, p);
    return [...found.values()];
  }

  /** The leg's processes with their command lines, for the evidence. */
  describe(processes: readonly LegProcess[] = this.list()): ListedProcess[] {
    return processes.map((p) => ({ pid: p.pid, command: commandLineOf(p.pid, this.procRoot) }));
  }

  /**
   * Sends `signal` to each process of the leg, each one re-probed (same pid, same start ticks) right
   * before its signal; SIGKILL to a cgroup goes through cgroup.kill, which the kernel applies to all at
   * once. A process in group `reachedGroup` is skipped: the caller signalled that group already, and a
   * command is told each signal exactly once (§8). Returns how many were signalled.
   */
  signal(signal: NodeJS.Signals, reachedGroup: number | null = null): number {
    const members = this.list();
    if (signal === "SIGKILL" && this.scope.containment === "cgroup" && this.scope.cgroup && members.length > 0 && !this.cgroupHoldsSelf()) {
      if (killCgroup(this.scope.cgroup)) return members.length;
    }
    let sent = 0;
    for (const p of members) {
      if (reachedGroup !== null && p.pgid === reachedGroup) continue;
      if (probeProcess(p.pid, p.startTicks, { procRoot: this.procRoot, sendSignal: this.sendSignal }) !== "alive") continue;
      try {
        this.sendSignal(p.pid, signal);
        sent++;
      } catch (error) {
        if (errorCode(error) !== "ESRCH" && errorCode(error) !== "EPERM") throw error;
      }
    }
    return sent;
  }

  /** Waits until no process of the leg is left, polling, for at most `ms`; true when none is. */
  async waitGone(ms: number, pollMs = 20): Promise<boolean> {
    const until = Date.now() + ms;
    for (;;) {
      if (this.list().length === 0) return true;
      if (Date.now() >= until) return false;
      await Bun.sleep(Math.min(pollMs, Math.max(1, until - Date.now())));
    }
  }

  /**
   * Stops the whole leg: `signal` to each process, up to the grace for them to go, then SIGKILL and a
   * short wait for the kernel to take them. Returns what was still there for the SIGKILL.
   */
  async stop(graceMs: number, signal: NodeJS.Signals = "SIGTERM"): Promise<{ killed: number }> {
    if (this.signal(signal) === 0 && this.list().length === 0) return { killed: 0 };
    if (await this.waitGone(graceMs)) return { killed: 0 };
    const killed = this.signal("SIGKILL");
    await this.waitGone(1000);
    return { killed };
  }

  /** What the kernel counted for the leg's cgroup; null without one. */
  usage(): CgroupUsage | null {
    return this.scope.containment === "cgroup" && this.scope.cgroup ? cgroupUsage(this.scope.cgroup) : null;
  }

  /** Removes the leg's cgroup once it is empty; false while a process is still in it (a leftover left running). */
  release(): boolean {
    return this.scope.containment === "cgroup" && this.scope.cgroup ? removeCgroup(this.scope.cgroup) : true;
  }

  /** Processes with the command's pid as their group, started no earlier than the leg (the "group" containment, and beside "environ"). */
  private groupMembers(): LegProcess[] {
    const pgid = this.scope.commandPid;
    if (pgid === null || pgid <= 1) return [];
    const notBefore = earliestStartTicks({ runId: this.scope.runId, supervisorStartTicks: this.scope.supervisorStartTicks, startedAt: this.scope.startedAt }, this.procRoot);
    if (notBefore === null) return [];
    let names: string[];
    try {
      names = fs.readdirSync(this.procRoot);
    } catch {
      return [];
    }
    const found: LegProcess[] = [];
    for (const name of names) {
      if (!/^[1-9][0-9]*$/.test(name)) continue;
      const pid = Number(name);
      if (pid === this.selfPid) continue;
      const stat = readProcStat(pid, this.procRoot);
      if (!stat || stat.pgid !== pgid || stat.startTicks < notBefore || isGone(stat.state)) continue;
      found.push({ pid, startTicks: stat.startTicks, pgid: stat.pgid });
      if (found.length >= MAX_LEG_PROCESSES) break;
    }
    return found;
  }

  private live(pids: number[]): LegProcess[] {
    const found: LegProcess[] = [];
    for (const pid of pids) {
      if (pid === this.selfPid) continue;
      const stat = readProcStat(pid, this.procRoot);
      if (!stat || isGone(stat.state)) continue;
      found.push({ pid, startTicks: stat.startTicks, pgid: stat.pgid });
      if (found.length >= MAX_LEG_PROCESSES) break;
    }
    return found;
  }

  /** li never kills itself: a supervisor that could not leave the cgroup after its spawn is still in it. */
  private cgroupHoldsSelf(): boolean {
    return this.scope.cgroup !== null && cgroupPids(this.scope.cgroup).includes(this.selfPid);
  }
}

function isGone(state: string): boolean {
  return state === "Z" || state === "X" || state === "x";
}

/** Operators and tests force the fallback with LI_CONTAINMENT=environ: no cgroup is made even where li could make one. */
export const CONTAINMENT_ENV = "LI_CONTAINMENT";

export type ContainmentMode = "auto" | "environ";

/** LI_CONTAINMENT's value: "environ" forces the fallback; unset, empty or "auto" lets li make a cgroup where it can. */
export function containmentMode(env: Readonly<Record<string, string | undefined>>): ContainmentMode {
  return env[CONTAINMENT_ENV] === "environ" ? "environ" : "auto";
}

export interface ContainedSpawn<T> {
  child: T;
  processes: LegProcesses;
  /** One line for li's log when containment is weaker than it should be (li could not leave the cgroup). */
  warning: string | null;
}

/**
 * Spawns the leg's command inside a containment of its own: in a new cgroup where li can make one (li
 * steps into it for the spawn, so the command is born there, then steps back out), else found by the
 * LI_LEG_RUN_ID it inherits (or, without a readable /proc, by its process group only).
 */
export function spawnContained<T extends { pid: number }>(
  leg: Pick<LegScope, "runId" | "supervisorStartTicks" | "startedAt">,
  mode: ContainmentMode,
  spawn: () => T,
  host: CgroupHost & LegProcessesOptions = {},
): ContainedSpawn<T> {
  const cgroup = mode === "auto" ? LegCgroup.create(leg.runId, host) : null;
  if (cgroup && cgroup.enter()) {
    let child: T;
    try {
      child = spawn();
    } catch (error) {
      cgroup.leave();
      removeCgroup(cgroup.dir);
      throw error;
    }
    // Still inside, li never kills the cgroup whole (cgroup.kill): it signals the others one by one.
    const left = cgroup.leave() || cgroup.leave();
    const processes = new LegProcesses({ ...leg, containment: "cgroup", cgroup: cgroup.dir, commandPid: child.pid }, host);
    return { child, processes, warning: left ? null : `warning: li could not leave the leg's cgroup ${cgroup.dir}; its processes are stopped one by one` };
  }
  if (cgroup) removeCgroup(cgroup.dir);
  const child = spawn();
  const procRoot = host.procRoot ?? PROC_ROOT;
  const containment: Containment = fs.existsSync(path.join(procRoot, "self/environ")) ? "environ" : "group";
  return { child, processes: new LegProcesses({ ...leg, containment, cgroup: null, commandPid: child.pid }, host), warning: null };
}

/** A leg's processes from its row, for a sweep or li kill on the leg's host (the supervisor may be dead). */
export function legProcessesOf(
  leg: { run_id: string; containment?: string | null; cgroup_path?: string | null; pid_start_ticks: number | null; started_at: number; command_pid: number | null; command_start_ticks: number | null },
  options: LegProcessesOptions = {},
): LegProcesses {
  const recorded = (CONTAINMENTS as readonly string[]).includes(leg.containment ?? "") ? (leg.containment as Containment) : null;
  // A leg recorded before li kept its containment, or whose markers never landed: its environment still names it.
  const containment: Containment = recorded === "cgroup" && !leg.cgroup_path ? "environ" : (recorded ?? "environ");
  return new LegProcesses(
    {
      containment,
      cgroup: containment === "cgroup" ? leg.cgroup_path! : null,
      runId: leg.run_id,
      supervisorStartTicks: leg.pid_start_ticks,
      startedAt: leg.started_at,
      commandPid: leg.command_start_ticks !== null ? leg.command_pid : null,
    },
    options,
  );
}
