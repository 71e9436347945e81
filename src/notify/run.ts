// Runs handlers (SPEC §9.2): argv without a shell, the envelope on stdin, LI_* env, own process group, one deadline.

import fs from "node:fs";
import path from "node:path";
import { killGroup, readStartTicks } from "../host/proc.ts";
import { withoutCredentials } from "../util/credentials.ts";
import { previewWord, renderArgv } from "./argv.ts";
import { handlerEnv, placeholderValues, type Envelope } from "./envelope.ts";
import { HANDLER_OWNER_ENV } from "./owner-env.ts";

/** The total time every handler of one push (or one delivery pass) shares (§9.4). */
export const DEFAULT_BUDGET_MS = 10_000;

export interface HandlerJob {
  /** Already rendered: placeholders substituted. */
  argv: readonly string[];
  envelope: Envelope;
  /** Owner-only file the handler's stderr is appended to; null discards it. */
  stderrPath: string | null;
}

export type HandlerResult =
  | { ok: true; pid: number }
  | { ok: false; why: "exit" | "signal" | "timeout" | "launch"; error: string; pid: number | null };

/** A log-safe description of an argv: the command and a preview of each argument, never values in full. */
export function describeArgv(argv: readonly string[]): string {
  const [command = "", ...rest] = argv;
  return [path.basename(command), ...rest.map((word) => JSON.stringify(previewWord(word)))].join(" ");
}

// O_NOFOLLOW: the run directory is the leg's, and its command could have left a symlink at the file's
// name pointing at any file of the user; li would then append to it and chmod it 0600 (§18).
const STDERR_FLAGS = fs.constants.O_WRONLY | fs.constants.O_APPEND | fs.constants.O_CREAT | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK | fs.constants.O_NOCTTY;

/** The handler's stderr file: opened without following a symlink, and used only when it is a regular file of ours. */
export function openStderr(file: string | null): number | "ignore" {
  if (file === null) return "ignore";
  let fd: number;
  try {
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    fd = fs.openSync(file, STDERR_FLAGS, 0o600);
  } catch {
    // A run directory that went away, or a symlink planted at the name: the notice still runs, its stderr discarded.
    return "ignore";
  }
  try {
    const stat = fs.fstatSync(fd);
    if (!stat.isFile() || stat.uid !== (process.getuid?.() ?? stat.uid)) {
      fs.closeSync(fd);
      return "ignore";
    }
    fs.fchmodSync(fd, 0o600);
    return fd;
  } catch {
    fs.closeSync(fd);
    return "ignore";
  }
}

let ownerValue: string | null = null;
/** This process as its handlers' owner, read once. */
function owner(): string {
  ownerValue ??= `${process.pid}.${readStartTicks(process.pid) ?? 0}`;
  return ownerValue;
}

/** Runs one handler until it exits or `deadline` (epoch ms) passes, then kills its whole group. */
export async function runHandler(job: HandlerJob, deadline: number): Promise<HandlerResult> {
  const stderr = openStderr(job.stderrPath);
  let proc: ReturnType<typeof Bun.spawn>;
  try {
    proc = Bun.spawn([...job.argv], {
      stdin: new Blob([JSON.stringify(job.envelope) + "\n"]),
      stdout: "ignore",
      stderr,
      // Who started it (§20): once that process is gone, the next watcher ends the handler with its group.
      // Never the ledger's credentials (§18): a handler runs what its registration says, not li's secrets.
      env: { ...withoutCredentials(process.env), ...handlerEnv(job.envelope), [HANDLER_OWNER_ENV]: owner() },
      // Its own session and process group, so the deadline kills everything it started.
      detached: true,
    });
  } catch (error) {
    return { ok: false, why: "launch", error: `cannot launch ${describeArgv(job.argv.slice(0, 1))}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`, pid: null };
  } finally {
    if (typeof stderr === "number") fs.closeSync(stderr);
  }
  const pid = proc.pid;
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    try {
      killGroup(pid, "SIGKILL");
    } catch {
      // The group is already gone.
    }
  }, Math.max(0, deadline - Date.now()));
  try {
    await proc.exited;
  } finally {
    clearTimeout(timer);
  }
  if (timedOut) return { ok: false, why: "timeout", error: "killed with its process group at the deadline", pid };
  if (proc.exitCode === 0) return { ok: true, pid };
  if (proc.exitCode !== null) return { ok: false, why: "exit", error: `exited ${proc.exitCode}`, pid };
  return { ok: false, why: "signal", error: `killed by ${proc.signalCode ?? "a signal"}`, pid };
}

/** Runs handlers concurrently under one total budget; one result per job, in order. Never throws. */
export async function runHandlers(jobs: readonly HandlerJob[], budgetMs: number): Promise<HandlerResult[]> {
  const deadline = Date.now() + budgetMs;
  return Promise.all(
    jobs.map((job) =>
      runHandler(job, deadline).catch((error: unknown): HandlerResult => ({ ok: false, why: "launch", error: (error as Error).message, pid: null })),
    ),
  );
}

/**
 * Without persistence (--no-persist, or setup failed) a leg runs its --notify once at the end, with
 * `durable: false` and no event id (§9.4). `argv` is the compiled template; placeholders are filled here.
 */
export async function runUndurable(
  argv: readonly string[],
  envelope: Envelope,
  opts: { stderrPath: string | null; exitCode?: number | null; budgetMs?: number },
): Promise<HandlerResult> {
  const undurable: Envelope = { ...envelope, durable: false };
  const rendered = renderArgv(argv, placeholderValues(undurable, { exitCode: opts.exitCode ?? null }));
  const [result] = await runHandlers([{ argv: rendered, envelope: undurable, stderrPath: opts.stderrPath }], opts.budgetMs ?? DEFAULT_BUDGET_MS);
  return result!;
}
