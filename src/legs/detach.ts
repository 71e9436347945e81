// `li agent --detach` (SPEC §8.4): the parent starts a supervising li in a new session and waits for its committed setup.

import fs from "node:fs";
import { SUPERVISOR_ENV } from "./env.ts";
import { HANDLER_OWNER_ENV } from "../notify/owner-env.ts";
import { SUPERVISOR_ARGV_ENV, SUPERVISOR_VISIBLE_ARGV } from "./supervisor-argv.ts";
import { ExitCode, UsageError } from "../util/errors.ts";
import type { Subprocess } from "bun";
import { WARM_ENV, WARM_FD, WARM_TAKEN, WARM_VALUE } from "./warm-entry.ts";
import { RUN_ID_ENV } from "./rundir-names.ts";

/** What the supervisor reports through the ready file. */
export type ReadyReport =
  | { ok: true; session_id: string; branch_id: string; run_id: string }
  | { ok: false; exit: number; message: string; /** killed by a signal before it reported */ died?: boolean };

/** The argv that runs this same li again: the compiled binary alone, or bun with its entry script. */
export function selfArgv(): string[] {
  const main = Bun.main;
  // A compiled binary's entry lives in its embedded file system ("/$bunfs/root/…"), which fs can see too.
  const compiled = main.startsWith("/$bunfs/") || main.includes("~BUN");
  return !compiled && fs.existsSync(main) && main !== process.execPath ? [process.execPath, main] : [process.execPath];
}

/** The parent's own arguments minus --detach (before `--`): the supervisor re-validates the same request. */
export function supervisorArgs(args: readonly string[]): string[] {
  const dashdash = args.indexOf("--");
  const own = dashdash === -1 ? [...args] : args.slice(0, dashdash);
  const rest = dashdash === -1 ? [] : args.slice(dashdash);
  return [...own.filter((a) => a !== "--detach" && a !== "--detach=true"), ...rest];
}

/**
 * The supervisor's end of the ready channel (§18, issue 10): an inherited socket on fd 3 that the parent
 * created, named `fd:3` in LI_SUPERVISOR_READY. The variable never names a path, so it cannot make li write
 * anywhere; anything else there is refused before li does anything.
 */
export const READY_FD = 3;
const READY_VALUE = `fd:${READY_FD}`;

export interface ReadyChannel {
  readonly fd: number;
}

export function openReadyChannel(value: string): ReadyChannel {
  const refuse = (why: string) =>
    new UsageError(`${SUPERVISOR_ENV}: ${why}; it is li's own channel from li agent --detach to its supervisor (an inherited socket, ${READY_VALUE}), never a path, and nothing was written`);
  if (value !== READY_VALUE) throw refuse(`${JSON.stringify(value.slice(0, 40))} is not ${READY_VALUE}`);
  let socket = false;
  try {
    socket = fs.fstatSync(READY_FD).isSocket();
  } catch {
    throw refuse(`fd ${READY_FD} is not open`);
  }
  if (!socket) throw refuse(`fd ${READY_FD} is not a socket`);
  return { fd: READY_FD };
}

/**
 * Sends the one report line and closes the channel, so the parent reads it whole and then sees the end.
 * A parent gone meanwhile (killed between the setup's commit and this line: a kill -9 of the li watch that
 * leased the run, a Ctrl-C of li agent --detach) has nobody to read it; the leg is recorded and runs on,
 * rather than its supervisor dying of the broken channel with its command never started.
 */
export function writeReady(channel: ReadyChannel, report: ReadyReport): void {
  try {
    fs.writeSync(channel.fd, `${JSON.stringify(report)}\n`);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EPIPE") throw error;
  } finally {
    fs.closeSync(channel.fd);
  }
}

/**
 * Starts the supervisor (setsid, stdin /dev/null, no terminal output) with one end of a socket pair on
 * its fd 3, and resolves with its report once setup committed, or a failure when it ends without one
 * (exit 78: nobody could wait on that id). The command the supervisor starts never inherits fd 3.
 */
export async function startDetached(args: readonly string[], env: Record<string, string | undefined>, options: { cwd?: string; warm?: WarmSupervisor } = {}): Promise<ReadyReport> {
  const childEnv: Record<string, string> = {};
  // The supervisor outlives whatever started it, a handler included (§20): it is no part of that handler.
  for (const [k, v] of Object.entries(env)) if (v !== undefined && k !== HANDLER_OWNER_ENV) childEnv[k] = v;
  childEnv[SUPERVISOR_ENV] = READY_VALUE;
  // The request rides in the supervisor's private environment: its argv is public (§18, supervisor-argv.ts).
  childEnv[SUPERVISOR_ARGV_ENV] = JSON.stringify(supervisorArgs(args));
  if (options.warm) {
    // The same environment and directory handed to a supervisor already started; null: none took it.
    const report = await options.warm.start(childEnv, options.cwd ?? process.cwd());
    if (report !== null) return report;
  }
  const child = Bun.spawn([...selfArgv(), ...SUPERVISOR_VISIBLE_ARGV], { env: childEnv, stdio: ["ignore", "ignore", "ignore", "pipe"], detached: true, ...(options.cwd ? { cwd: options.cwd } : {}) });
  child.unref();
  return readyReport(child);
}

/** The supervisor's report once its setup committed, or why none came (it ended without one). */
async function readyReport(child: Subprocess): Promise<ReadyReport> {
  const line = await firstLine(child.stdio[READY_FD] as number);
  const report = parseReport(line);
  if (report) return report;
  await child.exited;
  // Killed (a signal, a kill -9, the OOM killer) rather than refusing with an exit code: nothing says the run is at fault.
  return { ok: false, exit: ExitCode.unavailable, message: `the supervising li exited (${child.exitCode ?? child.signalCode}) before committing its setup`, ...(child.signalCode !== null ? { died: true } : {}) };
}

/** How long after a warm supervisor's report the next one is started (WarmSupervisor.primeSoon). */
export const WARM_PRIME_DELAY_MS = 100;

/**
 * One supervisor started ahead of need (li watch's dispatch, SPEC §19): a `li agent` past Bun's start-up
 * and li's module loading, waiting on its fd 4 for the environment and directory of the next leased run
 * (warm-entry.ts), so a dispatch pays neither. Each is used once and replaced after its report; one that
 * died while it waited is noticed when used (nothing takes the request) and that run's supervisor starts
 * the ordinary way. It ends with its watcher: close() ends it, and a watcher killed outright leaves fd 4
 * at its end, which ends it too.
 */
export class WarmSupervisor {
  private child: Subprocess | null = null;
  private closed = false;
  /** The next one's start, put off after a use (primeSoon) until the run just handed over has its command started. */
  private primeTimer: ReturnType<typeof setTimeout> | null = null;

  /** `env`: what it starts with (the watcher's, with where its ledger is); a run's replaces it whole. */
  constructor(private readonly env: Readonly<Record<string, string | undefined>>) {}

  /** The pid of the one waiting now, if any (tests find it here and in /proc). */
  get pid(): number | null {
    return this.child?.pid ?? null;
  }

  /** Starts one if none waits. */
  prime(): void {
    if (this.primeTimer !== null) clearTimeout(this.primeTimer);
    this.primeTimer = null;
    if (this.closed || (this.child !== null && this.child.exitCode === null && this.child.signalCode === null)) return;
    const env: Record<string, string> = {};
    // The watcher's own environment until a run's replaces it (never a handler's mark or a run's channel).
    for (const [k, v] of Object.entries(this.env)) if (v !== undefined && k !== HANDLER_OWNER_ENV && k !== SUPERVISOR_ARGV_ENV && k !== RUN_ID_ENV) env[k] = v;
    env[SUPERVISOR_ENV] = READY_VALUE;
    env[WARM_ENV] = WARM_VALUE;
    try {
      this.child = Bun.spawn([...selfArgv(), ...SUPERVISOR_VISIBLE_ARGV], { env, stdio: ["ignore", "ignore", "ignore", "pipe", "pipe"], detached: true, cwd: "/" });
      this.child.unref();
    } catch {
      this.child = null; // nothing started: the next dispatch starts its supervisor the ordinary way
    }
  }

  /**
   * Hands the waiting supervisor a run's environment and directory and resolves with its report; null
   * when none took them (none waiting, or it died meanwhile): then nothing of the run was done. Another
   * is started once this one reported.
   */
  async start(env: Readonly<Record<string, string>>, cwd: string): Promise<ReadyReport | null> {
    // The next one was put off (primeSoon): a dispatch that comes first starts it now and hands it this run.
    if (this.primeTimer !== null) this.prime();
    const child = this.child;
    this.child = null;
    if (child === null) {
      this.prime();
      return null;
    }
    try {
      let taken = false;
      try {
        fs.writeSync(child.stdio[WARM_FD] as number, `${JSON.stringify({ env, cwd })}\n`);
        taken = (await firstLine(child.stdio[WARM_FD] as number)) === WARM_TAKEN;
      } catch {
        taken = false; // EPIPE: it died while it waited
      }
      if (!taken) {
        child.kill("SIGKILL");
        return null;
      }
      return await readyReport(child);
    } finally {
      this.primeSoon();
    }
  }

  /**
   * Starts the next one a moment later: the supervisor that just reported is about to spawn its command,
   * and a li start-up beside it (two cores, a loaded host) would compete with that spawn for the CPU.
   */
  private primeSoon(): void {
    if (this.closed || this.primeTimer !== null) return;
    this.primeTimer = setTimeout(() => this.prime(), WARM_PRIME_DELAY_MS);
    this.primeTimer.unref?.();
  }

  /** Ends the one waiting (the watcher stops); a supervisor already handed a run is that run's and runs on. */
  close(): void {
    this.closed = true;
    if (this.primeTimer !== null) clearTimeout(this.primeTimer);
    this.primeTimer = null;
    const child = this.child;
    this.child = null;
    if (child !== null && child.exitCode === null) child.kill("SIGTERM");
  }
}

/** The text up to the first newline, or everything up to the end (null when nothing came). */
async function firstLine(fd: number): Promise<string | null> {
  const reader = Bun.file(fd).stream().getReader();
  const decoder = new TextDecoder();
  let text = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
      if (text.includes("\n")) break;
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
  return text === "" ? null : (text.split("\n")[0] ?? null);
}

function parseReport(line: string | null): ReadyReport | null {
  if (line === null) return null;
  try {
    return JSON.parse(line) as ReadyReport;
  } catch {
    return null;
  }
}
