// `li agent --detach` (SPEC §8.4): the parent starts a supervising li in a new session and waits for its committed setup.

import fs from "node:fs";
import { SUPERVISOR_ENV } from "./env.ts";
import { HANDLER_OWNER_ENV } from "../notify/owner-env.ts";
import { SUPERVISOR_ARGV_ENV, SUPERVISOR_VISIBLE_ARGV } from "./supervisor-argv.ts";
import { ExitCode, UsageError } from "../util/errors.ts";

/** What the supervisor reports through the ready file. */
export type ReadyReport =
  | { ok: true; session_id: string; branch_id: string; run_id: string }
  | { ok: false; exit: number; message: string };

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
export async function startDetached(args: readonly string[], env: Record<string, string | undefined>, options: { cwd?: string } = {}): Promise<ReadyReport> {
  const childEnv: Record<string, string> = {};
  // The supervisor outlives whatever started it, a handler included (§20): it is no part of that handler.
  for (const [k, v] of Object.entries(env)) if (v !== undefined && k !== HANDLER_OWNER_ENV) childEnv[k] = v;
  childEnv[SUPERVISOR_ENV] = READY_VALUE;
  // The request rides in the supervisor's private environment: its argv is public (§18, supervisor-argv.ts).
  childEnv[SUPERVISOR_ARGV_ENV] = JSON.stringify(supervisorArgs(args));
  const child = Bun.spawn([...selfArgv(), ...SUPERVISOR_VISIBLE_ARGV], { env: childEnv, stdio: ["ignore", "ignore", "ignore", "pipe"], detached: true, ...(options.cwd ? { cwd: options.cwd } : {}) });
  child.unref();
  const line = await firstLine(child.stdio[READY_FD] as number);
  const report = parseReport(line);
  if (report) return report;
  await child.exited;
  return { ok: false, exit: ExitCode.unavailable, message: `the supervising li exited (${child.exitCode ?? child.signalCode}) before committing its setup` };
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
