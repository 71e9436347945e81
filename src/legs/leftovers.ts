// After a leg's command ended (SPEC §8.7): what is still running in the leg, stopped when asked, the kernel's
// resource figures for the whole tree, and the one evidence entry that says which containment held.

import type { ChildUsage } from "./spawn.ts";
import type { LegProcesses, ListedProcess } from "./leg-processes.ts";

/** What a leg used, as stored on its row (SPEC §8.7). */
export interface LegUsage {
  cpu_user_seconds: number | null;
  cpu_system_seconds: number | null;
  peak_rss_bytes: number | null;
}

/** What the fallback cannot see, said in the evidence of every leg that used it. */
export const ENVIRON_LIMIT = "a process that cleared its environment (env -i) and left the command's process group cannot be found";

export interface EndedContainment {
  evidence: Record<string, unknown>;
  usage: LegUsage;
}

export interface EndOptions {
  /** The leg was stopped (deadline, signal, kill): its processes were already stopped whole. */
  stopped: boolean;
  stopLeftovers: boolean;
  graceMs: number;
  log: (line: string) => void;
}

/** Lists (and with --stop-leftovers stops) what outlived the command, reads the figures, and removes an emptied cgroup. */
export async function endContainment(processes: LegProcesses | null, child: ChildUsage | null, o: EndOptions): Promise<EndedContainment> {
  if (processes === null) {
    // LI_CONTAINMENT=off: nothing was looked for; the command's own figures only.
    const usage = { cpu_user_seconds: round(child?.cpuUserSeconds ?? null), cpu_system_seconds: round(child?.cpuSystemSeconds ?? null), peak_rss_bytes: child?.maxRssBytes ?? null };
    const from = child ? "rusage" : null;
    return { evidence: { kind: "containment", containment: "group", leftovers_checked: false, resource_use: { ...usage, cpu_from: from, memory_from: from } }, usage };
  }
  let leftovers: ListedProcess[] = [];
  let stoppedLeftovers = false;
  if (!o.stopped) {
    const found = processes.list();
    if (found.length > 0) {
      leftovers = processes.describe(found);
      const shown = leftovers.slice(0, 3).map((p) => `${p.pid} ${p.command || "?"}`).join(", ");
      const more = leftovers.length > 3 ? ` and ${leftovers.length - 3} more` : "";
      o.log(
        o.stopLeftovers
          ? `warning: ${leftovers.length} process(es) of the leg still ran after the command ended (${shown}${more}); stopping them`
          : `warning: ${leftovers.length} process(es) of the leg still run after the command ended (${shown}${more}); left running (--stop-leftovers stops them)`,
      );
      if (o.stopLeftovers) {
        await processes.stop(o.graceMs);
        stoppedLeftovers = true;
      }
    }
  }
  const kernel = processes.usage();
  const usage: LegUsage = {
    // The cgroup counts every process of the leg, those that left the command's tree too; wait4 only what the command waited for.
    cpu_user_seconds: round(kernel?.cpuUserSeconds ?? child?.cpuUserSeconds ?? null),
    cpu_system_seconds: round(kernel?.cpuSystemSeconds ?? child?.cpuSystemSeconds ?? null),
    peak_rss_bytes: kernel?.peakMemoryBytes ?? child?.maxRssBytes ?? null,
  };
  const released = processes.release();
  const evidence: Record<string, unknown> = {
    kind: "containment",
    containment: processes.containment,
    ...(processes.scope.cgroup ? { cgroup: processes.scope.cgroup } : {}),
    leftover_processes: leftovers,
    ...(leftovers.length > 0 ? { leftovers_stopped: stoppedLeftovers } : {}),
    resource_use: {
      ...usage,
      cpu_from: kernel?.cpuUserSeconds != null ? "cgroup" : child ? "rusage" : null,
      memory_from: kernel?.peakMemoryBytes != null ? "cgroup" : child ? "rusage" : null,
    },
    ...(processes.containment !== "cgroup" ? { limits: ENVIRON_LIMIT } : {}),
    ...(processes.containment === "cgroup" && !released ? { cgroup_kept: true } : {}),
  };
  return { evidence, usage };
}

function round(seconds: number | null): number | null {
  return seconds === null ? null : Math.round(seconds * 1e6) / 1e6;
}
