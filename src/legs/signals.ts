// Stopping a leg's command: one termination cause, the signal sent to its group and every process of the leg once, SIGKILL after a grace.

import { armTimer } from "../util/timer.ts";
import { DEFAULT_KILL_GRACE_SECONDS } from "../settings/defaults.ts";
import { killGroup, type SignalSender } from "../host/proc.ts";
import type { LegProcesses } from "./leg-processes.ts";
import type { Termination } from "./outcome.ts";

/** Signals to li that end a leg, and the termination each one records. */
export const LI_SIGNALS = { SIGINT: "sigint", SIGTERM: "sigterm", SIGHUP: "sighup" } as const satisfies Record<string, Termination>;
export type LiSignal = keyof typeof LI_SIGNALS;

export { DEFAULT_KILL_GRACE_SECONDS };
export const DEFAULT_KILL_GRACE_MS = DEFAULT_KILL_GRACE_SECONDS * 1000;

/** How long the stop waits for the kernel to take what SIGKILL hit, before the leg ends without them. */
const AFTER_KILL_WAIT_MS = 1000;

/**
 * Ends the command's process group, and with `processes` every process of the leg (those that left the
 * group or the session too, SPEC §8.7), at most once. The first cause wins (a Ctrl-C after a deadline
 * stays a timeout); later requests neither re-signal nor change the cause.
 */
export class GroupTerminator {
  private cause: Termination | null = null;
  private disarmKill: () => void = () => {};
  private killed = false;

  constructor(
    private readonly pgid: number,
    private readonly graceMs: number = DEFAULT_KILL_GRACE_MS,
    private readonly sendSignal?: SignalSender,
    private readonly processes?: LegProcesses,
  ) {}

  get reason(): Termination | null {
    return this.cause;
  }

  /** Records the cause, sends `signal` to the group, and schedules SIGKILL of the group after the grace. */
  stop(cause: Termination, signal: NodeJS.Signals): void {
    if (this.cause !== null) return;
    this.cause = cause;
    this.send(signal);
    this.disarmKill = armTimer(this.graceMs, () => {
      this.killed = true;
      this.send("SIGKILL");
    });
  }

  /**
   * The command has exited. When li asked its group to stop, the rest of the group (a grandchild
   * ignoring SIGTERM) still gets the SIGKILL at the end of the grace: resolves once the group is
   * empty or that SIGKILL went out. A command that ended on its own leaves its group alone.
   */
  async settle(pollMs = 20): Promise<void> {
    while (this.cause !== null && !this.killed) {
      // The group is one kill(2) to look at; the rest of the leg may be a scan of /proc, looked at less often.
      if (this.groupRemains()) await Bun.sleep(pollMs);
      else if (this.processes !== undefined && this.processes.list().length > 0) await Bun.sleep(Math.max(pollMs, this.processes.pollMs));
      else break;
    }
    this.dispose();
    if (this.killed && this.processes) await this.processes.waitGone(AFTER_KILL_WAIT_MS);
  }

  /** No SIGKILL for whatever of the group remains. */
  dispose(): void {
    this.disarmKill();
  }

  private groupRemains(): boolean {
    try {
      return killGroup(this.pgid, 0, this.sendSignal);
    } catch {
      return false; // EPERM: what is left is not ours to wait for
    }
  }

  private send(signal: NodeJS.Signals): void {
    try {
      killGroup(this.pgid, signal, this.sendSignal);
    } catch {
      // EPERM: the group now holds a process that is not ours; nothing more li may do.
    }
    try {
      // The group got it above: only what left the group is signalled here, so nothing is told twice.
      this.processes?.signal(signal, this.pgid);
    } catch {
      // A process of the leg li may not signal: the rest were.
    }
  }
}

/**
 * Routes SIGINT/SIGTERM/SIGHUP received by li to `onSignal` for as long as the leg runs.
 * The command sits in its own session, so a terminal's Ctrl-C reaches it only through li.
 */
export function trapLiSignals(onSignal: (signal: LiSignal) => void): () => void {
  const handlers = (Object.keys(LI_SIGNALS) as LiSignal[]).map((signal) => {
    const handler = () => onSignal(signal);
    process.on(signal, handler);
    return [signal, handler] as const;
  });
  return () => {
    for (const [signal, handler] of handlers) process.off(signal, handler);
  };
}

/**
 * li's own signals for a whole `li agent` run, trapped before its first setup commit (§8.1). A signal
 * while a command runs stops its group. A signal while none runs (before the spawn, during a teardown,
 * between `--auto-resume` legs) or while the group is already being stopped for another cause (a
 * deadline) is kept, the first one winning: the next leg ends by it without starting its command.
 */
export class LiSignalTrap {
  private kept: LiSignal | null = null;
  private group: GroupTerminator | null = null;
  private readonly untrap: () => void;

  constructor() {
    this.untrap = trapLiSignals((signal) => this.receive(signal));
  }

  /** The signal kept for the next leg, if any: that leg ends by it and never spawns. */
  get pending(): LiSignal | null {
    return this.kept;
  }

  /** The command's group exists: a signal kept until now is sent to it at once. */
  attach(group: GroupTerminator): void {
    this.group = group;
    const kept = this.kept;
    if (kept === null) return;
    this.kept = null;
    group.stop(LI_SIGNALS[kept], kept);
  }

  /** The command ended: signals from now on are kept for a next leg. */
  detach(): void {
    this.group = null;
  }

  release(): void {
    this.untrap();
  }

  /** A stop asked for through the ledger (li kill from another host): handled exactly as if `signal` had arrived. */
  request(signal: LiSignal): void {
    this.receive(signal);
  }

  private receive(signal: LiSignal): void {
    if (this.group && this.group.reason === null) this.group.stop(LI_SIGNALS[signal], signal);
    else this.kept ??= signal;
  }
}

/** Arms the deadline; returns a disarm function. */
export function armDeadline(seconds: number | null, onDeadline: () => void): () => void {
  if (seconds === null) return () => {};
  // Up to 365 days (§18): longer than one setTimeout holds, so armTimer re-arms it.
  return armTimer(seconds * 1000, onDeadline);
}
