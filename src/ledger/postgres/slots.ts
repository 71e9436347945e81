// A host-wide bound on the connections li's short-lived processes hold at once on one PostgreSQL
// ledger (§20): before a process opens its pool it takes one of LI_PG_SLOTS slots (default 6), an
// exclusive flock on `$LI_HOME/pg-slots/<hash of the ledger>/<n>.lock`, and it gives the slot back
// once that pool is closed. A burst of 500 legs starting at once then holds at most that many
// connections on top of the watchers', instead of reaching the role's limit and being refused.
//
// A flock belongs to the open file, so the slot dies with its process: kill -9 leaks none and no
// sweep is needed. The file is opened close-on-exec, so a command spawned meanwhile never holds it.
// A process takes one slot however many pools it opens (their count is shared), so it never waits
// for a slot it holds itself. Waiting polls (flock has no async form in Bun) with a growing pause,
// always within the caller's own deadline.

import { dlopen, FFIType } from "bun:ffi";
import { closeSync, constants, mkdirSync, openSync } from "node:fs";
import path from "node:path";
import { UsageError } from "../../util/errors.ts";

export const DEFAULT_SLOTS = 6;
const MAX_SLOTS = 1000;
const LOCK_EX = 2;
const LOCK_NB = 4;
/** Linux's O_CLOEXEC (node:fs does not export it). */
const O_CLOEXEC = 0o2000000;
const FIRST_PAUSE_MS = 10;
const MAX_PAUSE_MS = 200;

export interface Slot {
  /** Gives the slot back (once; later calls do nothing). The last holder in the process unlocks it. */
  release(): void;
}

/** The number of slots: LI_PG_SLOTS (a whole number from 1), else the default; a bad value is the caller's usage error. */
export function slotCount(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.LI_PG_SLOTS;
  if (raw === undefined || raw === "") return DEFAULT_SLOTS;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > MAX_SLOTS) throw new UsageError(`LI_PG_SLOTS must be a whole number from 1 to ${MAX_SLOTS} (got ${JSON.stringify(raw)})`);
  return n;
}

/** `$LI_HOME/pg-slots/<hash of the ledger key>`: one set of slots per ledger per host. */
export function slotDir(liHome: string, ledgerKey: string): string {
  return path.join(liHome, "pg-slots", new Bun.CryptoHasher("sha256").update(ledgerKey).digest("hex").slice(0, 16));
}

let libc: { symbols: { flock(fd: number, op: number): number } } | null = null;
function flock(fd: number, op: number): number {
  libc ??= dlopen("libc.so.6", { flock: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 } });
  return libc.symbols.flock(fd, op);
}

/** The slot this process holds per slot directory, and how many of its pools share it. */
const held = new Map<string, { fd: number; holders: number }>();

function share(dir: string): Slot {
  const entry = held.get(dir)!;
  entry.holders++;
  let released = false;
  return {
    release() {
      if (released) return;
      released = true;
      if (--entry.holders > 0) return;
      held.delete(dir);
      // Closing the file drops the lock (the only copy of it: close-on-exec).
      closeSync(entry.fd);
    },
  };
}

/**
 * The slot of a process that cannot take part in its home's slots: a LI_HOME it may read but not write (a
 * root-owned system home, a read-only mount). Such a process runs reads, not legs; refusing it its read for
 * want of a lock file would be worse than one connection outside the count.
 */
const UNCOUNTED: Slot = Object.freeze({ release() {} });

/** Runs `make` (the slot directory or a slot file); false when the home refuses it (not ours to write). */
function slotsWritable(make: () => void): boolean {
  try {
    make();
    return true;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "EACCES" || code === "EPERM" || code === "EROFS") return false;
    throw error;
  }
}

/** One pass over the slots: the first free one, locked, or null when all are taken. */
export function trySlot(dir: string, count: number): Slot | null {
  if (held.has(dir)) return share(dir);
  if (!slotsWritable(() => mkdirSync(dir, { recursive: true, mode: 0o700 }))) return UNCOUNTED;
  // Starting at a random slot spreads a burst over them instead of every process trying slot 0 first.
  const start = Math.floor(Math.random() * count);
  for (let i = 0; i < count; i++) {
    const file = path.join(dir, `${(start + i) % count}.lock`);
    let fd = -1;
    if (!slotsWritable(() => (fd = openSync(file, constants.O_RDWR | constants.O_CREAT | O_CLOEXEC, 0o600)))) return UNCOUNTED;
    if (flock(fd, LOCK_EX | LOCK_NB) === 0) {
      held.set(dir, { fd, holders: 0 });
      return share(dir);
    }
    closeSync(fd);
  }
  return null;
}

/**
 * A slot, waited for until `withinMs` pass (or `signal` aborts): null when none came free in time.
 * Never waits longer than the caller's own deadline.
 */
export async function waitForSlot(dir: string, count: number, withinMs: number, signal?: AbortSignal): Promise<Slot | null> {
  const giveUpAt = performance.now() + Math.max(0, withinMs);
  let pause = FIRST_PAUSE_MS;
  for (;;) {
    const slot = trySlot(dir, count);
    if (slot) return slot;
    const left = giveUpAt - performance.now();
    if (left <= 0 || signal?.aborted) return null;
    // Jittered, so a burst's waiters do not all look at the same instant.
    await pauseFor(Math.min(left, pause * (0.5 + Math.random())), signal);
    pause = Math.min(pause * 2, MAX_PAUSE_MS);
  }
}

function pauseFor(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}
