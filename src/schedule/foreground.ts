// A foreground `li agent --queue` (SPEC §19): it submitted its run, waits its turn itself (no watcher
// needed), leases its own run and runs the leg in the foreground, retries included; Ctrl-C while it waits
// cancels the run and starts nothing. A watcher that took the run meanwhile (the waiter's process was gone
// for a while, or it is another host's) is simply followed to the end.

import type { Ledger } from "../ledger/ledger.ts";
import type { ScheduleRunRow } from "../ledger/rows.ts";
import { isTerminal } from "../lifecycle/policy.ts";
import { armTimer } from "../util/timer.ts";
import { settleDependenciesInTx } from "./dependencies.ts";
import { leaseNext, type Lessee } from "./lease.ts";
import { moveRun } from "./move.ts";
import { chainTip, queueRetry } from "./retry.ts";

/** A trap for Ctrl-C/SIGTERM held only while nothing runs (the leg installs its own). */
export interface WaitTrap {
  readonly signal: AbortSignal;
  /** Which signal it was (SIGINT → run.cancelled.sigint). */
  readonly which: () => "SIGINT" | "SIGTERM" | null;
  release(): void;
}

export interface ForegroundDeps {
  ledger: Ledger;
  lessee: Lessee;
  trap: () => WaitTrap;
  /** Runs the leased run's leg in the foreground (li agent's own leg, bound to the run); resolves with li's exit code. */
  runLeg: (run: ScheduleRunRow) => Promise<number>;
  log: (line: string) => void;
  pollMs?: number;
}

export type ForegroundResult =
  /** The last attempt's leg ran here; `exit` is li's exit code for it. */
  | { kind: "ran"; runId: string; exit: number }
  /** The run ended without a leg here (skipped, cancelled, or run by a watcher): its final row. */
  | { kind: "ended"; run: ScheduleRunRow }
  /** Ctrl-C or SIGTERM while waiting: the run was cancelled (or had already moved on), nothing started. */
  | { kind: "interrupted"; runId: string; signal: "SIGINT" | "SIGTERM"; cancelled: boolean };

const WAITING = ["queued", "waiting_dependency", "retry_wait"];

async function cancelWaiting(ledger: Ledger, runId: string, which: "SIGINT" | "SIGTERM"): Promise<boolean> {
  const applied = await ledger.transact((tx, ctx) =>
    moveRun(tx, ctx, runId, {
      from: WAITING,
      to: "cancelled",
      reasonCode: which === "SIGINT" ? "run.cancelled.sigint" : "run.cancelled.sigterm",
      reasonSummary: `li agent --queue was interrupted (${which}) while the run waited; nothing started`,
      source: "executor",
      actor: "li agent --queue",
      extra: { ended_at: ctx.now() },
    }),
  );
  if (applied) ledger.emitTerminal(applied);
  return applied !== null;
}

/** Waits for `ms` or the trap, whichever first. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const stop = armTimer(ms, () => done());
    const done = () => {
      stop();
      signal.removeEventListener("abort", done);
      resolve();
    };
    signal.addEventListener("abort", done, { once: true });
  });
}

/**
 * Waits for run `firstRunId` and runs it here. `firstTrap`: the trap the caller set before submitting, so a
 * Ctrl-C between the submit's commit and the wait still cancels the run (released here, like every trap).
 */
export async function waitAndRun(deps: ForegroundDeps, firstRunId: string, firstTrap?: WaitTrap): Promise<ForegroundResult> {
  const { ledger } = deps;
  const pollMs = deps.pollMs ?? 1000;
  let pending: WaitTrap | undefined = firstTrap ?? deps.trap();
  let wake;
  try {
    wake = await ledger.backend.wake();
  } catch (error) {
    pending.release();
    throw error;
  }
  let runId = firstRunId;
  try {
    for (;;) {
      const trap = pending ?? deps.trap();
      pending = undefined;
      let leased: ScheduleRunRow | null = null;
      try {
        for (;;) {
          const generation = wake.generation;
          const which = trap.which();
          if (trap.signal.aborted && which) return { kind: "interrupted", runId, signal: which, cancelled: await cancelWaiting(ledger, runId, which) };
          let run = await ledger.backend.schedule.getRun(runId);
          if (!run) throw new Error(`schedule run ${runId} is gone from the ledger`);
          if (run.status === "waiting_dependency") {
            const moved = await ledger.transact((tx, ctx) => settleDependenciesInTx(tx, ctx, runId));
            if (moved) ledger.emitTerminal(moved);
            run = (await ledger.backend.schedule.getRun(runId))!;
          }
          if (run.status === "retry_wait") {
            const tip = await chainTip(ledger, run);
            if (tip.id !== run.id) {
              runId = tip.id;
              continue;
            }
            const wait = Math.max(0, ((run.retry_at ?? 0) - ledger.now()) * 1000);
            if (wait > 0) {
              await pause(Math.min(wait, pollMs * 5), trap.signal);
              continue;
            }
            const next = await queueRetry(ledger, run);
            runId = next?.id ?? (await chainTip(ledger, run)).id;
            continue;
          }
          if (run.status === "queued") {
            leased = await leaseNext(ledger, run.queue ?? "default", deps.lessee, { onlyRunId: run.id });
            if (leased) break;
          }
          if (isTerminal("schedule_run", run.status)) {
            return { kind: "ended", run };
          }
          await Promise.race([wake.changed(generation, pollMs), pause(pollMs, trap.signal)]);
        }
      } finally {
        trap.release();
      }
      // Our turn: the leg runs here, with its own signal handling (Ctrl-C now ends the leg as aborted).
      const exit = await deps.runLeg(leased);
      const after = await ledger.backend.schedule.getRun(leased.id);
      if (after?.status !== "retry_wait") return { kind: "ran", runId: leased.id, exit };
      deps.log(`schedule run ${leased.id}: ${after.status_reason_summary ?? "the attempt failed; retrying"}`);
    }
  } finally {
    wake.close();
  }
}
