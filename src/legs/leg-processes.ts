// The processes of one leg (SPEC §8.7): found by its cgroup, or by the LI_LEG_RUN_ID they inherit, or by
// its process group; listed, signalled and waited for until gone. Every path that stops a leg goes here.

import fs from "node:fs";
import path from "node:path";
import { cgroupPids, cgroupUsage, killCgroup, LegCgroup, removeCgroup, type CgroupHost, type CgroupUsage } from "./cgroup.ts";
import { PROC_ROOT, probeProcess, readProcStat, type SignalSender } from "../host/proc.ts";
import { earliestStartTicks } from "./environ-scan.ts";
import { LEG_RUN_ID_ENV } from "./env.ts";
import { holdsEntry, readEnviron } from "../host/environ.ts";

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
  /**
   * performance.now() when the command was spawned, by the process that spawned it: a scan soon after
   * may look only at the pids allocated since (see pidWindow). Absent: every process is looked at.
   */
  spawnedAtMs?: number;
  procRoot?: string;
  sendSignal?: SignalSender;
  /** Never listed nor signalled: the process that looks. */
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
  private readonly spawnedAtMs: number | null;

  constructor(
    readonly scope: LegScope,
    options: LegProcessesOptions = {},
  ) {
    this.procRoot = options.procRoot ?? PROC_ROOT;
    this.sendSignal = options.sendSignal ?? process.kill.bind(process);
    this.selfPid = options.selfPid ?? process.pid;
    this.spawnedAtMs = options.spawnedAtMs ?? null;
  }

  get containment(): Containment {
    return this.scope.containment;
  }

  /** The live processes of the leg now (zombies are gone), at most MAX_LEG_PROCESSES. */
  list(): LegProcess[] {
    const s = this.scope;
    if (s.containment === "cgroup" && s.cgroup) return this.live(cgroupPids(s.cgroup));
    return this.scan(s.containment === "environ");
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
    if (signal === "SIGKILL" && this.scope.containment === "cgroup" && this.scope.cgroup && members.length > 0) {
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
  /** How often a wait looks again: a cgroup's member list is cheap, a scan of /proc is not. */
  get pollMs(): number {
    return this.scope.containment === "cgroup" ? 20 : 100;
  }

  async waitGone(ms: number, pollMs = this.pollMs): Promise<boolean> {
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

  /**
   * One pass over /proc: the processes started no earlier than the leg that are in the command's group
   * (the "group" containment, and beside "environ": a process that cleared its environment but stayed in
   * the group is still found) or, with `byEnviron`, that carry the leg's LI_LEG_RUN_ID and are ours.
   * The start time is read first, from one small read of stat into a reused buffer: most processes are
   * older than the leg and cost nothing more.
   */
  private scan(byEnviron: boolean): LegProcess[] {
    const s = this.scope;
    const notBefore = earliestStartTicks({ runId: s.runId, supervisorStartTicks: s.supervisorStartTicks, startedAt: s.startedAt }, this.procRoot);
    if (notBefore === null) return [];
    const pgid = s.commandPid !== null && s.commandPid > 1 ? s.commandPid : null;
    const entry = byEnviron && s.runId !== "" ? Buffer.from(`${LEG_RUN_ID_ENV}=${s.runId}`) : null;
    if (pgid === null && entry === null) return [];
    const uid = process.getuid?.() ?? -1;
    const selfGroup = entry ? (readProcStat(this.selfPid, this.procRoot)?.pgid ?? null) : null;
    const window = this.pidWindow();
    let names: string[];
    if (window && window.hi - window.lo < 512) {
      // A short leg: the few pids allocated since the spawn, looked up directly (no listing of /proc).
      names = [];
      for (let pid = window.lo; pid <= window.hi; pid++) names.push(String(pid));
    } else {
      try {
        names = fs.readdirSync(this.procRoot);
      } catch {
        return [];
      }
    }
    const found: LegProcess[] = [];
    for (const name of names) {
      const c = name.charCodeAt(0);
      if (c < 49 || c > 57) continue; // a pid starts with 1-9
      const pid = Number(name);
      if (!Number.isSafeInteger(pid) || pid === this.selfPid) continue;
      if (window && (pid < window.lo || pid > window.hi)) continue;
      const stat = quickStat(path.join(this.procRoot, name, "stat"));
      if (!stat || stat.startTicks < notBefore || isGone(stat.state)) continue;
      let member = pgid !== null && stat.pgid === pgid;
      if (!member && entry && stat.pgid !== selfGroup) member = ownedBy(path.join(this.procRoot, name), uid) && holdsEnvEntry(path.join(this.procRoot, name, "environ"), entry);
      if (!member) continue;
      found.push({ pid, startTicks: stat.startTicks, pgid: stat.pgid });
      if (found.length >= MAX_LEG_PROCESSES) break;
    }
    return found;
  }

  /**
   * The pids the kernel can have given the leg's processes, when that is certain: pids are handed out in
   * increasing order and wrap at pid_max (32768 on many machines), so every process started since the
   * spawn has a pid from the command's up to the last one given out — unless the counter went all the
   * way round. A full round in this little time would take tens of thousands of forks: the window is used
   * only within WINDOW_MS of the spawn and while the counter stands less than a quarter round past the
   * command's pid. null: look at every process.
   */
  private pidWindow(): { lo: number; hi: number } | null {
    const c = this.scope.commandPid;
    if (this.spawnedAtMs === null || c === null || performance.now() - this.spawnedAtMs > WINDOW_MS) return null;
    const last = readNumber(path.join(this.procRoot, "sys/kernel/ns_last_pid"));
    const max = readNumber(path.join(this.procRoot, "sys/kernel/pid_max"));
    if (last === null || max === null || last < c || last - c > max / 4) return null;
    return { lo: c, hi: last };
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

}

/** How long after the spawn the pid window may stand in for a look at every process (see pidWindow). */
const WINDOW_MS = 250;

function readNumber(file: string): number | null {
  try {
    const text = fs.readFileSync(file, "latin1").trim();
    return /^\d+$/.test(text) ? Number(text) : null;
  } catch {
    return null;
  }
}

/** A stat read (one page is plenty: the command name is at most 64 bytes) shared by every scan of this process. */
const STAT_BUFFER = Buffer.alloc(4096);

/** State, process group and start ticks from /proc/PID/stat, parsed from the bytes after the command name's last ')'. */
function quickStat(file: string): { state: string; pgid: number; startTicks: number } | null {
  let n: number;
  try {
    const fd = fs.openSync(file, "r");
    try {
      n = fs.readSync(fd, STAT_BUFFER, 0, STAT_BUFFER.length, 0);
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    return null;
  }
  const close = STAT_BUFFER.lastIndexOf(0x29, n - 1);
  if (close < 0) return null;
  // Fields from 3 (state) on, split by single spaces: field 5 is the group, field 22 the start time.
  let field = 3;
  let at = close + 2;
  let state = "";
  let pgid = -1;
  while (at < n && field <= 22) {
    let end = at;
    while (end < n && STAT_BUFFER[end] !== 0x20 && STAT_BUFFER[end] !== 0x0a) end++;
    if (field === 3) state = String.fromCharCode(STAT_BUFFER[at]!);
    else if (field === 5) pgid = Number(STAT_BUFFER.toString("latin1", at, end));
    else if (field === 22) {
      const startTicks = Number(STAT_BUFFER.toString("latin1", at, end));
      return Number.isSafeInteger(startTicks) && Number.isSafeInteger(pgid) ? { state, pgid, startTicks } : null;
    }
    field++;
    at = end + 1;
  }
  return null;
}

/** Only a process of ours is found by its environment (another user's environ is not ours to read). */
function ownedBy(dir: string, uid: number): boolean {
  try {
    return fs.statSync(dir).uid === uid;
  } catch {
    return false;
  }
}

function holdsEnvEntry(file: string, entry: Buffer): boolean {
  const environ = readEnviron(file);
  return environ !== null && holdsEntry(environ, entry);
}

function isGone(state: string): boolean {
  return state === "Z" || state === "X" || state === "x";
}

/**
 * LI_CONTAINMENT: "environ" forces the fallback (no cgroup is made even where li could make one); "off"
 * leaves only the command's process group, as li did before it contained legs (nothing is looked for
 * after the end: what containment costs is measured against it).
 */
export const CONTAINMENT_ENV = "LI_CONTAINMENT";

export type ContainmentMode = "auto" | "environ" | "off";

/** LI_CONTAINMENT's value; unset, empty, "auto" or anything else lets li make a cgroup where it can. */
export function containmentMode(env: Readonly<Record<string, string | undefined>>): ContainmentMode {
  const value = env[CONTAINMENT_ENV];
  return value === "environ" || value === "off" ? value : "auto";
}

export interface ContainedSpawn<T> {
  child: T;
  /** null with LI_CONTAINMENT=off: only the command's group is stopped. */
  processes: LegProcesses | null;
}

/**
 * Spawns the leg's command inside a containment of its own: born in a new cgroup where li can make one
 * (`spawn` is given its directory, for Bun.spawn's `cgroup` option), else found by the LI_LEG_RUN_ID it
 * inherits (or, without a readable /proc, by its process group only). A spawn into the cgroup that fails
 * (a kernel that refuses the cgroup) is made again without one, under the fallback; when that fails too,
 * its error is the command's own (not found, not executable).
 */
export function spawnContained<T extends { pid: number }>(
  leg: Pick<LegScope, "runId" | "supervisorStartTicks" | "startedAt">,
  mode: ContainmentMode,
  spawn: (cgroup: string | null) => T,
  host: CgroupHost & LegProcessesOptions = {},
): ContainedSpawn<T> {
  if (mode === "off") return { child: spawn(null), processes: null };
  const cgroup = mode === "auto" ? LegCgroup.create(leg.runId, host) : null;
  if (cgroup) {
    let child: T | null = null;
    const spawnedAtMs = performance.now();
    try {
      child = spawn(cgroup.dir);
    } catch {
      // Retried below without the cgroup; an error of the command's own comes again there.
    }
    if (child) return { child, processes: new LegProcesses({ ...leg, containment: "cgroup", cgroup: cgroup.dir, commandPid: child.pid }, { ...host, spawnedAtMs }) };
    removeCgroup(cgroup.dir);
  }
  const spawnedAtMs = performance.now();
  const child = spawn(null);
  const procRoot = host.procRoot ?? PROC_ROOT;
  const containment: Containment = fs.existsSync(path.join(procRoot, "self/environ")) ? "environ" : "group";
  return { child, processes: new LegProcesses({ ...leg, containment, cgroup: null, commandPid: child.pid }, { ...host, spawnedAtMs }) };
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
