// `li agent --detach` (SPEC §8.4): the parent starts a supervising li in a new session and waits for its committed setup.

import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { SUPERVISOR_ENV } from "./env.ts";
import { ExitCode } from "../util/errors.ts";

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

/** Writes the report atomically (the parent polls for the file). */
export function writeReady(file: string, report: ReadyReport): void {
  const temp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(temp, JSON.stringify(report), { mode: 0o600 });
  fs.renameSync(temp, file);
}

/**
 * Starts the supervisor (setsid, stdin /dev/null, no terminal output) and resolves with its report
 * once setup committed, or a failure when it exits first (exit 78: nobody could wait on that id).
 */
export async function startDetached(args: readonly string[], env: Record<string, string | undefined>, pollMs = 5): Promise<ReadyReport> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "li-detach-"));
  const file = path.join(dir, "ready.json");
  const childEnv: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined) childEnv[k] = v;
  childEnv[SUPERVISOR_ENV] = file;
  try {
    const child = Bun.spawn([...selfArgv(), ...supervisorArgs(args)], { env: childEnv, stdin: "ignore", stdout: "ignore", stderr: "ignore", detached: true });
    child.unref();
    let exited = false;
    child.exited.then(() => (exited = true));
    for (;;) {
      const report = readReady(file);
      if (report) return report;
      if (exited) return readReady(file) ?? { ok: false, exit: ExitCode.unavailable, message: `the supervising li exited (${child.exitCode ?? child.signalCode}) before committing its setup` };
      await Bun.sleep(pollMs);
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function readReady(file: string): ReadyReport | null {
  try {
    return JSON.parse(fs.readFileSync(file, "utf8")) as ReadyReport;
  } catch {
    return null;
  }
}
