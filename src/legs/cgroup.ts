// A cgroup v2 of a leg's own (SPEC §8.7): where the cgroup2 hierarchy is mounted, making, entering, killing and removing one.

import fs from "node:fs";
import path from "node:path";
import { PROC_ROOT } from "../host/proc.ts";

/** The slice every leg's cgroup is made in, under the hierarchy's root or under li's own (delegated) cgroup. */
export const LI_SLICE = "li.slice";

/** A run id becomes a directory name: anything else is refused rather than escaped. */
const CGROUP_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

export interface CgroupHost {
  procRoot?: string;
  /** The mount table to read (default /proc/self/mounts). */
  mountsFile?: string;
}

/** Where the cgroup2 hierarchy is mounted (hybrid hosts mount it at /sys/fs/cgroup/unified), from the mount table; null: none. */
export function cgroup2Mount(host: CgroupHost = {}): string | null {
  let table: string;
  try {
    table = fs.readFileSync(host.mountsFile ?? path.join(host.procRoot ?? PROC_ROOT, "self/mounts"), "utf8");
  } catch {
    return null;
  }
  for (const line of table.split("\n")) {
    const [, mountPoint, fsType] = line.split(" ");
    // Octal escapes (\040 for a space) as the kernel writes them.
    if (fsType === "cgroup2" && mountPoint) return mountPoint.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
  }
  return null;
}

/** This process's cgroup in the v2 hierarchy (the `0::` line of /proc/self/cgroup), e.g. "/" or "/user.slice/…"; null: none. */
export function ownCgroup(procRoot: string = PROC_ROOT): string | null {
  try {
    const line = fs.readFileSync(path.join(procRoot, "self/cgroup"), "utf8").split("\n").find((l) => l.startsWith("0::"));
    return line ? line.slice(3) || "/" : null;
  } catch {
    return null;
  }
}

function writable(dir: string): boolean {
  try {
    fs.accessSync(path.join(dir, "cgroup.procs"), fs.constants.W_OK);
    return fs.statSync(dir).isDirectory();
  } catch {
    return false;
  }
}

/**
 * A leg's own cgroup, made right before the spawn. The command is born inside it (Bun.spawn's `cgroup`
 * option: clone3 with CLONE_INTO_CGROUP, so it is in the leg's cgroup before its first instruction), and
 * everything it starts, whatever its session or group, stays in it. li itself never enters: moving a
 * process by a write to cgroup.procs waits for an RCU grace period (~10 ms), a child born inside does not.
 */
export class LegCgroup {
  private constructor(
    /** The cgroup's directory (absolute). */
    readonly dir: string,
  ) {}

  /**
   * Makes `li.slice/<runId>` under the hierarchy's root when li may write there (root), else under li's
   * own cgroup (a delegated subtree, such as a systemd user service with Delegate=yes). null: no cgroup
   * can be made here (no cgroup2 mount, no write access), and the caller falls back. No controller is
   * enabled anywhere, so the "no internal processes" rule never refuses a process born inside.
   */
  static create(runId: string, host: CgroupHost = {}): LegCgroup | null {
    if (!CGROUP_NAME.test(runId)) return null;
    const mount = cgroup2Mount(host);
    const own = ownCgroup(host.procRoot);
    if (mount === null || own === null) return null;
    const home = path.join(mount, own);
    if (!writable(home)) return null;
    // A leg inside another leg (li agent run by a leg's command) stays inside that leg's cgroup: stopping the outer stops it too.
    const nested = own.split("/").includes(LI_SLICE);
    for (const parent of nested ? [home] : [mount, home]) {
      if (!writable(parent)) continue;
      const slice = path.join(parent, LI_SLICE);
      const dir = path.join(slice, runId);
      try {
        fs.mkdirSync(slice, { recursive: true });
        fs.mkdirSync(dir);
        if (writable(dir)) return new LegCgroup(dir);
        fs.rmdirSync(dir);
      } catch {
        // Not ours to make here: try the next place.
      }
    }
    return null;
  }
}

/** The pids in a cgroup now (cgroup.procs); empty when it is gone or unreadable. */
export function cgroupPids(dir: string): number[] {
  let text: string;
  try {
    text = fs.readFileSync(path.join(dir, "cgroup.procs"), "utf8");
  } catch {
    return [];
  }
  const pids: number[] = [];
  for (const line of text.split("\n")) if (/^[1-9][0-9]*$/.test(line)) pids.push(Number(line));
  return pids;
}

/** SIGKILL to every process in the cgroup at once (cgroup.kill, kernel 5.14+); false when the file is not there. */
export function killCgroup(dir: string): boolean {
  try {
    fs.writeFileSync(path.join(dir, "cgroup.kill"), "1");
    return true;
  } catch {
    return false;
  }
}

/** Removes the (empty) cgroup; false while a process is still in it, or when it is already gone. */
export function removeCgroup(dir: string): boolean {
  try {
    fs.rmdirSync(dir);
    return true;
  } catch {
    return false;
  }
}

/** What the cgroup itself counted for its whole tree: cpu.stat is always there; memory.peak only with the memory controller. */
export interface CgroupUsage {
  cpuUserSeconds: number | null;
  cpuSystemSeconds: number | null;
  peakMemoryBytes: number | null;
}

export function cgroupUsage(dir: string): CgroupUsage {
  const usage: CgroupUsage = { cpuUserSeconds: null, cpuSystemSeconds: null, peakMemoryBytes: null };
  try {
    const stat = fs.readFileSync(path.join(dir, "cpu.stat"), "utf8");
    const field = (name: string) => {
      const m = new RegExp(`^${name} (\\d+)$`, "m").exec(stat);
      return m ? Number(m[1]) / 1e6 : null;
    };
    usage.cpuUserSeconds = field("user_usec");
    usage.cpuSystemSeconds = field("system_usec");
  } catch {
    // No cpu.stat: the caller keeps the direct child's figures.
  }
  try {
    const peak = fs.readFileSync(path.join(dir, "memory.peak"), "utf8").trim();
    if (/^\d+$/.test(peak)) usage.peakMemoryBytes = Number(peak);
  } catch {
    // No memory controller in this hierarchy.
  }
  return usage;
}

/**
 * Removes the leg cgroups that are empty and older than `minAgeSeconds`: a leg whose leftovers were left
 * running, or whose supervisor died, leaves its cgroup behind once they are gone. rmdir refuses a cgroup
 * that still holds a process (or a nested leg's cgroup), and the age keeps a leg's cgroup made a moment
 * ago, its command not yet spawned into it, from being taken away under it. Returns the directories removed.
 */
export function removeEmptyLegCgroups(minAgeSeconds: number, nowMs: number = Date.now(), host: CgroupHost & { only?: (runId: string) => boolean } = {}): string[] {
  const mount = cgroup2Mount(host);
  const own = ownCgroup(host.procRoot);
  if (mount === null) return [];
  const slices = new Set([path.join(mount, LI_SLICE), ...(own ? [path.join(mount, own, LI_SLICE)] : [])]);
  const removed: string[] = [];
  for (const slice of slices) {
    let names: string[];
    try {
      names = fs.readdirSync(slice);
    } catch {
      continue;
    }
    for (const name of names) {
      if (!CGROUP_NAME.test(name) || (host.only && !host.only(name))) continue;
      const dir = path.join(slice, name);
      const stat = fs.lstatSync(dir, { throwIfNoEntry: false });
      if (!stat?.isDirectory() || nowMs - stat.ctimeMs < minAgeSeconds * 1000) continue;
      if (removeCgroup(dir)) removed.push(dir);
    }
  }
  return removed;
}
