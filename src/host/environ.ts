// Reading another process's environment from /proc (bounded): how li finds processes it started but no marker names.

import fs from "node:fs";
import path from "node:path";
import { readProcStat } from "./proc.ts";

/** An environment is at most a few MiB (ARG_MAX); reading stops here, whatever /proc offers. */
const ENVIRON_READ_LIMIT = 4 << 20;

/** Reads at most ENVIRON_READ_LIMIT bytes; null when the file cannot be opened (gone, not ours). */
export function readEnviron(file: string): Buffer | null {
  let fd: number;
  try {
    fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
  } catch {
    return null;
  }
  try {
    const chunks: Buffer[] = [];
    let total = 0;
    while (total < ENVIRON_READ_LIMIT) {
      const chunk = Buffer.alloc(Math.min(65536, ENVIRON_READ_LIMIT - total));
      const n = fs.readSync(fd, chunk, 0, chunk.length, null);
      if (n <= 0) break;
      chunks.push(chunk.subarray(0, n));
      total += n;
    }
    return Buffer.concat(chunks);
  } catch {
    return null;
  } finally {
    fs.closeSync(fd);
  }
}

/** true when the NUL-separated environment holds exactly `NAME=value` as one of its entries. */
export function holdsEntry(environ: Buffer, entry: Buffer): boolean {
  for (let at = environ.indexOf(entry); at !== -1; at = environ.indexOf(entry, at + 1)) {
    const startsEntry = at === 0 || environ[at - 1] === 0;
    const end = at + entry.length;
    if (startsEntry && (end === environ.length || environ[end] === 0)) return true;
  }
  return false;
}

/** The value of `name` in the NUL-separated environment (its first entry), or null. */
export function environValue(environ: Buffer, name: string): string | null {
  const prefix = Buffer.from(`${name}=`);
  for (let at = environ.indexOf(prefix); at !== -1; at = environ.indexOf(prefix, at + 1)) {
    if (at !== 0 && environ[at - 1] !== 0) continue;
    const end = environ.indexOf(0, at);
    return environ.subarray(at + prefix.length, end === -1 ? environ.length : end).toString("utf8");
  }
  return null;
}

/** A live process as a /proc scan sees it: its pid and /proc/PID/stat's group, state and start ticks. */
export interface ScannedProcess {
  pid: number;
  stat: { state: string; pgid: number; startTicks: number };
  /** Its environment, read when first asked (most scanned processes are never read). */
  environ(): Buffer | null;
}

/**
 * Every live (not zombie, not dead) process of `uid` under `procRoot` but `selfPid`: what li's scans by
 * environment walk (a leg's escaped descendants, a dead watcher's handlers). Unreadable entries are passed over.
 */
export function* processesOf(uid: number, procRoot: string, selfPid: number): Generator<ScannedProcess> {
  let names: string[];
  try {
    names = fs.readdirSync(procRoot);
  } catch {
    return;
  }
  for (const name of names) {
    if (!/^[1-9][0-9]*$/.test(name)) continue;
    const pid = Number(name);
    if (!Number.isSafeInteger(pid) || pid === selfPid) continue;
    try {
      if (fs.statSync(path.join(procRoot, name)).uid !== uid) continue;
    } catch {
      continue;
    }
    const stat = readProcStat(pid, procRoot);
    if (!stat || stat.state === "Z" || stat.state === "X" || stat.state === "x") continue;
    yield { pid, stat, environ: () => readEnviron(path.join(procRoot, name, "environ")) };
  }
}
