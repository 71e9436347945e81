// Starts a leg's command: argv as given (never a shell), in a session and process group of its own.

import type { Subprocess } from "bun";

export interface SpawnOptions {
  cwd: string;
  env: Record<string, string>;
  /** "inherit" passes piped stdin through; "ignore" gives /dev/null (li's stdin is a terminal, or a detached leg). */
  stdin: "inherit" | "ignore";
  /** A cgroup directory the command is born in (clone3's CLONE_INTO_CGROUP): it never runs outside it. */
  cgroup?: string | null;
}

export interface SpawnedCommand {
  /** Also the process group id: the child leads a new session (setsid). */
  readonly pid: number;
  readonly stdout: ReadableStream<Uint8Array>;
  readonly stderr: ReadableStream<Uint8Array>;
  /** Resolves when the command exits: its exit status, or the signal that ended it. */
  readonly exited: Promise<{ exitCode: number | null; signalCode: string | null }>;
  /** Once exited: the kernel's figures for the command and the descendants it waited for (wait4's rusage); null before, or when unknown. */
  usage(): ChildUsage | null;
}

export interface ChildUsage {
  cpuUserSeconds: number;
  cpuSystemSeconds: number;
  maxRssBytes: number;
}

/** A command that could not start: not found (127) or not executable (126), the codes a shell gives (§16). */
export class SpawnError extends Error {
  override readonly name = "SpawnError";
  constructor(
    message: string,
    readonly exitCode: 126 | 127,
  ) {
    super(message);
  }
}

/** ENOENT is "command not found" to a shell; anything else that stops an exec (EACCES, ENOEXEC…) is "cannot execute". */
function shellExitCode(error: unknown): 126 | 127 {
  return (error as { code?: unknown } | null)?.code === "ENOENT" ? 127 : 126;
}

export function spawnCommand(argv: readonly string[], options: SpawnOptions): SpawnedCommand {
  let child: Subprocess<"inherit" | "ignore", "pipe", "pipe">;
  try {
    child = Bun.spawn([...argv], {
      cwd: options.cwd,
      env: options.env,
      stdin: options.stdin,
      stdout: "pipe",
      stderr: "pipe",
      // setsid: the command's group is its own, so signals to it never reach li's caller.
      detached: true,
      ...(options.cgroup ? { cgroup: options.cgroup } : {}),
    });
  } catch (error) {
    throw new SpawnError(`cannot run ${JSON.stringify(argv[0])}: ${error instanceof Error ? error.message : String(error)}`, shellExitCode(error));
  }
  const exited = child.exited.then(() => {
    const signal = child.signalCode;
    return { exitCode: signal ? null : child.exitCode, signalCode: signal === null || signal === undefined ? null : String(signal) };
  });
  const usage = (): ChildUsage | null => {
    const r = child.resourceUsage();
    if (!r) return null;
    return { cpuUserSeconds: Number(r.cpuTime.user) / 1e6, cpuSystemSeconds: Number(r.cpuTime.system) / 1e6, maxRssBytes: r.maxRSS };
  };
  return { pid: child.pid, stdout: child.stdout, stderr: child.stderr, exited, usage };
}

/** The stdin a command gets: a terminal cannot be shared with a group outside its foreground (§8). */
export function stdinMode(stdinIsTty: boolean, detached: boolean): "inherit" | "ignore" {
  return stdinIsTty || detached ? "ignore" : "inherit";
}
