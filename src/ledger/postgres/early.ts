// A PostgreSQL ledger's session, opened while the rest of li loads (src/ledger/early-open.ts): a cold
// command on PostgreSQL spends most of its time waiting for the server (a new backend, its
// authentication, the first query's catalog reads), and loading li's modules is CPU work that can
// happen meanwhile. Only the handshake (connection.ts) runs early; the command's own open takes it
// over (a missing schema, a migration, every failure is handled there as if it had connected itself).

import { existsSync } from "node:fs";
import { sessionLimits, type PoolShape } from "./client.ts";
import { ServerClock } from "./clock.ts";
import { handshake, slotPlace, type PendingHandshake } from "./connection.ts";
import { holdsLedgerLong } from "../slot-use.ts";
import { trySlot } from "./slots.ts";
import { resolvePgTarget } from "./options.ts";

/** What a command does with its ledger, as far as its connections are concerned. */
export type PoolUse = "reads" | "writes";

/**
 * The pool each use opens (client.ts PoolShape). Reads: one connection (a LISTEN takes its own), each
 * statement sent unnamed since a read command runs it once. Writes: one for a short-lived command or a
 * leg (its heartbeat and teardown queue on it; each pool is one of the host's connection slots, §20,
 * slots.ts), two for a long-lived one (li watch: its passes and its handlers' writes overlap).
 */
export function poolShape(use: PoolUse): Omit<PoolShape, "limits"> {
  if (use === "reads") return { max: 1, prepare: false };
  return { max: holdsLedgerLong() ? 2 : 1 };
}

const started = new Map<string, PendingHandshake>();
const keyOf = (url: string, use: PoolUse) => `${use} ${url}`;

/** Starts the handshake for `url`; anything wrong with the URL or the settings is left to the command's own open to report. */
export function startEarly(url: string, use: PoolUse, home?: string): void {
  const key = keyOf(url, use);
  if (started.has(key)) return;
  let shake: PendingHandshake;
  try {
    const target = resolvePgTarget(url);
    // A slot of the host's first (§20): when none is free now, the command's own open waits for one.
    // Not before LI_HOME exists: a command refused for its usage must leave nothing behind.
    const place = slotPlace(target, home, holdsLedgerLong(), false);
    if (!place && home !== undefined && !holdsLedgerLong() && !existsSync(home)) return;
    const slot = place ? trySlot(place.dir, place.count) : null;
    if (place && !slot) return;
    shake = handshake(target, { ...poolShape(use), limits: sessionLimits() }, new ServerClock(), slot);
  } catch {
    return;
  }
  // Its failure belongs to the command that takes it over (or to nobody: closeUnadopted).
  shake.result.catch(() => {});
  started.set(key, shake);
}

/** The handshake started for `url` and `use`, taken over by the caller (once). */
export function adoptEarly(url: string, use: PoolUse): PendingHandshake | undefined {
  const key = keyOf(url, use);
  const shake = started.get(key);
  started.delete(key);
  return shake;
}

/** Thrown to roll warmTriggers' transaction back. */
const ROLL_BACK = new Error("roll back");

/**
 * Compiles, in this session's server backend, the triggers a leg's setup fires (status_transitions'
 * notifications, plpgsql): a backend compiles a plpgsql function and plans its statements at its first
 * call, 10-25 ms of the first history row a new session inserts on a loaded host, which would otherwise
 * fall on the leg's setup. One row, of a session that does not exist, inserted in a transaction that is
 * always rolled back: nothing is ever committed, no notification is sent (a rolled-back transaction sends
 * none), and its seq is a negative number no committed row can hold, so no writer waits on it.
 */
async function warmTriggers(sql: import("bun").SQL): Promise<void> {
  const id = `warm-${crypto.randomUUID()}`;
  const seq = -1 - Math.floor(Math.random() * 1e9);
  await sql
    .begin(async (tx) => {
      await tx.unsafe("INSERT INTO status_transitions (id, seq, entity_type, entity_id, status, reason_code, source, created_at) VALUES ($1, $2, 'session', $1, 'running', 'session.running.created', 'executor', 0)", [id, seq]);
      throw ROLL_BACK;
    })
    .catch((error: unknown) => {
      if (error !== ROLL_BACK) throw error;
    });
}

/**
 * Warms the sessions started early and not taken over yet (a warm supervisor while it waits, SPEC §19):
 * once connected to a ledger whose tables exist in li's schema, its triggers are compiled (warmTriggers).
 * Failures are nobody's: the command's own open and statements meet whatever is wrong and report it.
 */
export function warmStarted(): void {
  for (const shake of started.values()) {
    void shake.result
      .then(async ({ client, first }) => {
        if (first.version === null || first.currentSchema !== client.target.schema) return;
        await warmTriggers(client.sql);
      })
      .catch(() => {});
  }
}

/** Closes what no command took over (it failed its validation, or never opened the ledger). */
export function closeUnadopted(): void {
  // One still connecting (a server that does not answer) is given up now, not at its connect timeout.
  for (const shake of started.values()) shake.discard();
  started.clear();
}
