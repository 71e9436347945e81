// Shared by the late-record and outage tests (§17): a command held until a file appears, the running
// leg once its markers are recorded, the reaper's wrong verdict on it, and the ledger's invariants.

import { expect } from "bun:test";
import { openLedger } from "../../src/ledger/open.ts";
import { reaper } from "../../src/sweeps/reaper.ts";
import { pathsForHome } from "../helpers/backends.ts";
import type { LedgerRows } from "../helpers/ledger-rows.ts";
import { until } from "../helpers/until.ts";

/** A command that runs until the file `go` appears, then exits with `code`. */
export const waitsFor = (go: string, code = 0) => ["sh", "-c", `while [ ! -e ${go} ]; do sleep 0.02; done; exit ${code}`];

/** The running leg (and its session) once its command's markers are recorded. */
export function legRecorded(db: LedgerRows): Promise<{ session_id: string; id: string }> {
  return until("a running leg with command markers", async () => (await db.exists()) && db.get<{ session_id: string; id: string }>("SELECT session_id, id FROM legs WHERE command_pid IS NOT NULL AND ended_at IS NULL"));
}

/** Each entity's status equals its newest history row; no leg without a session, no current leg without a row. */
export async function expectInvariants(db: LedgerRows): Promise<void> {
  expect(await db.historyProblems()).toEqual([]);
  expect(await db.orphanLegs()).toEqual([]);
}

/**
 * The reaper's wrong verdict: the leg's recorded start ticks no longer match (as if its pids had been
 * reused), so the reaper judges its supervisor and command dead — and kills nothing; past the grace by
 * the sweep's clock.
 */
export async function reapWrongly(home: string, db: LedgerRows, legId: string): Promise<void> {
  await db.run("UPDATE legs SET pid_start_ticks = pid_start_ticks + 1, command_start_ticks = command_start_ticks + 1 WHERE id = ?", legId);
  const ledger = openLedger(pathsForHome(home), { create: false });
  try {
    const summary = await reaper.runOnce(ledger, Date.now() / 1000 + 120, reaper.validate({}));
    expect(summary.swept).toBe(1);
    expect(summary.actions[0]!.killed).toBeNull();
  } finally {
    ledger.close();
  }
}
