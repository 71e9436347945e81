// Refreshes a running leg's heartbeat_at, so liveness on another host can be judged (SPEC §8.5, §12.1).

import type { Backend } from "../ledger/backend.ts";
import { UsageError } from "../util/errors.ts";

export const HEARTBEAT_INTERVAL_MS = 15_000;

/**
 * A beat waits this long at most for another process's write lock (§17): on SQLite the wait blocks the
 * leg's thread, which also carries the command's output; a beat that gives up is simply the next one.
 */
export const HEARTBEAT_LOCK_WAIT_MS = 250;

/**
 * Test setting: the heartbeat period in seconds (a test that must prove a leg learned something by
 * LISTEN rather than at its next beat sets it far above its deadline). Not for production use.
 */
export const HEARTBEAT_ENV = "LI_TEST_HEARTBEAT_SECONDS";

/** The period LI_TEST_HEARTBEAT_SECONDS asks for, in ms; undefined when unset. A bad value is a UsageError naming it. */
export function heartbeatMsFromEnv(env: Readonly<Record<string, string | undefined>>): number | undefined {
  const value = env[HEARTBEAT_ENV];
  if (value === undefined || value.trim() === "") return undefined;
  const seconds = Number(value);
  if (!/^\s*\d+(\.\d+)?\s*$/.test(value) || !(seconds >= 0.01 && seconds <= 86_400)) {
    throw new UsageError(`${HEARTBEAT_ENV}: expected a number of seconds from 0.01 to 86400`);
  }
  return Math.round(seconds * 1000);
}

export interface HeartbeatOptions {
  intervalMs?: number;
  now: () => number;
  /** Where the one warning goes when beats start failing (§17: not one line per beat). */
  log?: (line: string) => void;
  /** After each beat that landed (the kill-request fallback looks at the leg's row then). */
  afterBeat?: () => unknown;
  /** Calls `tick` every `intervalMs` until the returned function is called; tests tick by hand. */
  every?: (intervalMs: number, tick: () => void) => () => void;
}

/** setInterval, not keeping the process alive for its own sake. */
function everyInterval(intervalMs: number, tick: () => void): () => void {
  const timer = setInterval(tick, intervalMs);
  timer.unref?.();
  return () => clearInterval(timer);
}

/**
 * Starts the heartbeat; returns a stop function. A failed beat is retried at the next interval, never
 * fatal to the leg: the command runs on whatever the ledger does (§17). The first failure warns once;
 * a beat that lands again after failures says so once too, so the log shows the outage's extent.
 *
 * A tick while the previous beat is still in flight is no beat: a beat outlasts the interval when the
 * ledger is away (PostgreSQL waits out each call's deadline; SQLite waits for another process's lock),
 * and starting beats anyway would pile one more pending transaction (and connection attempt) up per
 * tick. The write itself never lowers heartbeat_at either (Tx.refreshHeartbeat), whatever commits last.
 */
export function startHeartbeat(backend: Backend, legId: string, options: HeartbeatOptions): () => void {
  let failing = false;
  let warned = false;
  let inFlight = false;
  const beat = () => {
    if (inFlight) return;
    inFlight = true;
    // The beat's time is when it fires, not when its transaction gets a connection (later on PostgreSQL).
    const at = options.now();
    backend.transaction((tx) => tx.refreshHeartbeat(legId, at), { lockWaitMs: HEARTBEAT_LOCK_WAIT_MS }).then(
      () => {
        inFlight = false;
        if (failing && warned) options.log?.("heartbeat: the ledger takes heartbeats again");
        failing = false;
        options.afterBeat?.();
      },
      (error: unknown) => {
        inFlight = false;
        failing = true;
        if (warned) return;
        warned = true;
        options.log?.(`warning: heartbeat failed (${error instanceof Error ? error.message : String(error)}); retrying every beat, the command runs on`);
      },
    );
  };
  return (options.every ?? everyInterval)(options.intervalMs ?? HEARTBEAT_INTERVAL_MS, beat);
}
