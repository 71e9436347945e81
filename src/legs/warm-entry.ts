// The waiting side of a warm supervisor (SPEC §19 dispatch): a `li agent` that li watch started ahead of
// need, already past Bun's start-up and li's module loading, blocked on its fd 4 (a socket its watcher
// holds the other end of) for one request: the environment and working directory the detached supervisor
// of a leased run would have been started with (detach.ts). It takes them as its own, acknowledges, and goes
// on exactly as that supervisor would (its argv then rides in LI_SUPERVISOR_ARGV, its ready channel is fd 3).
// The end of fd 4 with nothing on it (its watcher stopped or was killed) ends it at once, having done nothing.
// Kept light: the binary's entry loads it before anything else, for every command; node:fs (~1 ms of a
// command's start-up, docs/benchmarks.md) loads only in a warm supervisor that took its request.

import { SUPERVISOR_ARGV_ENV, SUPERVISOR_ENV, SUPERVISOR_VISIBLE_ARGV } from "./supervisor-argv.ts";

/** Set by li watch on the supervisor it starts ahead of need: its request channel, an inherited socket. */
export const WARM_ENV = "LI_SUPERVISOR_WARM";
export const WARM_FD = 4;
export const WARM_VALUE = `fd:${WARM_FD}`;
/**
 * Tests only: a file whose presence holds a warm supervisor just after it took its request, before anything
 * of the run is done (how a kill -9 at that moment is tested). Read from the environment li watch gave it.
 */
export const WARM_HOLD_ENV = "LI_TEST_WARM_HOLD";
/** How long a warm supervisor keeps the ledger session it opened while waiting (PostgreSQL) unused. */
export const WARM_CONNECTION_MS = 30_000;
/** Tests only: that time in ms instead (read from the environment li watch gave it). */
export const WARM_CONNECTION_ENV = "LI_TEST_WARM_CONNECTION_MS";

export function warmConnectionMs(env: Readonly<Record<string, string | undefined>>): number {
  const ms = Number(env[WARM_CONNECTION_ENV]);
  return Number.isSafeInteger(ms) && ms > 0 ? ms : WARM_CONNECTION_MS;
}
/**
 * What does not depend on the run, done while the warm supervisor waits: a SQLite ledger opened (its
 * migrations' check and pragmas; a server's session opens in cli.ts), and Bun's first child process paid
 * (a process's first Bun.spawn costs several ms more than the next: the command's would be that first one).
 * Anything that fails here is left for the run's own path to meet and report.
 */
export async function prepareWarm(): Promise<void> {
  try {
    const [{ openSqliteAhead }, { resolvePaths }] = await Promise.all([import("../ledger/open.ts"), import("../ledger/location.ts")]);
    openSqliteAhead(resolvePaths());
  } catch {
    // the run's supervisor opens its ledger itself, and says what is wrong with it
  }
  try {
    // Nothing inherited (fd 3 and 4 are the watcher's channels): no input, no output, no environment.
    await Bun.spawn(["/bin/true"], { stdio: ["ignore", "ignore", "ignore"], env: {}, cwd: "/" }).exited;
  } catch {
    // no /bin/true: the command's spawn pays the first-spawn cost as it did
  }
}

/** What the warm supervisor answers once it made the request its own (the watcher then waits for the ready report). */
export const WARM_TAKEN = "taken";

export interface WarmRequest {
  env: Record<string, string>;
  cwd: string;
}

/** Whether this process is a warm supervisor (and so must wait for its request before anything else). */
export function isWarm(argv: readonly string[], env: Readonly<Record<string, string | undefined>>): boolean {
  if (env[WARM_ENV] === undefined) return false;
  // Only the shape li watch starts; anything else is an ordinary li that happens to carry the variable.
  return env[WARM_ENV] === WARM_VALUE && env[SUPERVISOR_ENV] !== undefined && env[SUPERVISOR_ARGV_ENV] === undefined && argv.length === SUPERVISOR_VISIBLE_ARGV.length && argv.every((w, i) => w === SUPERVISOR_VISIBLE_ARGV[i]);
}

function parseRequest(line: string): WarmRequest | null {
  try {
    const value = JSON.parse(line) as { env?: unknown; cwd?: unknown };
    if (typeof value.cwd !== "string" || !value.cwd.startsWith("/")) return null;
    if (typeof value.env !== "object" || value.env === null || Array.isArray(value.env)) return null;
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(value.env)) {
      if (typeof v !== "string") return null;
      env[k] = v;
    }
    // The request is a supervisor's: its argv and its ready channel are in it, as detach.ts starts one.
    if (env[SUPERVISOR_ARGV_ENV] === undefined || env[SUPERVISOR_ENV] === undefined || env[WARM_ENV] !== undefined) return null;
    return { env, cwd: value.cwd };
  } catch {
    return null;
  }
}

/** The first line on fd 4, or null at its end. The fd is closed afterwards: the command never inherits it. */
async function requestLine(): Promise<string | null> {
  const reader = Bun.file(WARM_FD).stream().getReader();
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
    reader.releaseLock();
  }
  const newline = text.indexOf("\n");
  return newline === -1 ? null : text.slice(0, newline);
}

/**
 * Waits for the request and makes it this process's own: its environment replaces the one li watch gave
 * (every variable), its working directory becomes this one's, and the watcher is told. False when none
 * came (the watcher is gone) or it cannot be taken (a directory gone meanwhile): the caller exits, and
 * the watcher, told nothing, starts that run's supervisor the ordinary way.
 */
export async function takeWarmRequest(env: Record<string, string | undefined>): Promise<boolean> {
  const hold = env[WARM_HOLD_ENV];
  let request: WarmRequest | null = null;
  try {
    const line = await requestLine();
    request = line === null ? null : parseRequest(line);
    if (request === null) return false;
    process.chdir(request.cwd);
  } catch {
    return false;
  }
  for (const name of Object.keys(env)) delete env[name];
  Object.assign(env, request.env);
  const fs = require("node:fs") as typeof import("node:fs");
  try {
    fs.writeSync(WARM_FD, `${WARM_TAKEN}\n`);
  } catch {
    return false; // the watcher went away: it will not wait for this run's report, and its lease will expire
  } finally {
    try {
      fs.closeSync(WARM_FD);
    } catch {
      // already closed
    }
  }
  while (hold !== undefined && hold !== "" && fs.existsSync(hold)) await Bun.sleep(10);
  return true;
}
