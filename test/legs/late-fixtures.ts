// Shared by the late-record and outage tests (§17): a command held until a file appears, the running
// leg once its markers are recorded, the reaper's wrong verdict on it, and the ledger's invariants.

import { hostEnv } from "../../src/sweeps/sweep.ts";
import { expect } from "bun:test";
import { li } from "../helpers/cli.ts";
import { fixture } from "../helpers/fixtures.ts";
import { openLedger } from "../../src/ledger/open.ts";
import { reaper } from "../../src/sweeps/reaper.ts";
import { pathsForHome } from "../helpers/backends.ts";
import type { LedgerRows } from "../helpers/ledger-rows.ts";
import { until, validPid } from "../helpers/until.ts";

/** A command that runs until the file `go` appears, then exits with `code`. */
export const waitsFor = (go: string, code = 0) => ["sh", "-c", `while [ ! -e ${go} ]; do sleep 0.02; done; exit ${code}`];

/** The running leg (and its session) once its command's markers are recorded. */
export function legRecorded(db: LedgerRows): Promise<{ session_id: string; id: string }> {
  return until("a running leg with command markers", async () => (await db.exists()) && db.get<{ session_id: string; id: string }>("SELECT session_id, id FROM legs WHERE command_pid IS NOT NULL AND ended_at IS NULL"));
}

/**
 * A detached leg running `forever` with `env` (its LI_HOME, ledger and host) and li agent's `flags`, once
 * its supervisor recorded the command's markers. Both processes go on `leftRunning` (killedAfterEachTest).
 */
export async function detachedLeg(
  db: LedgerRows,
  env: Record<string, string | undefined>,
  leftRunning: Array<{ pid: number; group: boolean }>,
  flags: string[] = [],
): Promise<{ id: string; supervisor: number; command: number }> {
  const started = await li(["agent", "--detach", ...flags, "--", fixture("forever")], { env });
  if (started.code !== 0) throw new Error(`li agent --detach exited ${started.code}: ${started.stderr}`);
  const id = started.stdout.trim();
  const leg = await until(`the command markers of session ${id}`, async () => {
    const row = await db.get<{ pid: number; command_pid: number | null }>("SELECT pid, command_pid FROM legs WHERE session_id = ?", id);
    return row?.command_pid != null ? row : null;
  });
  const supervisor = validPid(leg.pid, "the supervisor");
  const command = validPid(leg.command_pid, "the command");
  leftRunning.push({ pid: command, group: true }, { pid: supervisor, group: false });
  return { id, supervisor, command };
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
    // Its processes are others' now as far as the reaper can tell: nothing of the leg is found to kill.
    const summary = await reaper.runOnce(ledger, Date.now() / 1000 + 120, reaper.validate({}), hostEnv({ killLeg: () => null }));
    expect(summary.swept).toBe(1);
    expect(summary.actions[0]!.killed).toBeNull();
  } finally {
    ledger.close();
  }
}
