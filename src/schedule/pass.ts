// The scheduler's pass (SPEC §19), run by `li watch` on every wake-up: a list of steps in a fixed order,
// each a small function over the ledger that returns what it changed. Runs whose leg ended are settled
// first (their slots free up), then expired leases go back to their queues, due retries are queued, waiting
// runs whose dependencies decided move on, and last each queue leases what this host may start. Dispatch
// also runs first, so a run just submitted does not wait for the other steps' reads (runSchedulePass).
// Another kind of due work (a schedule's fire) is one more step that submits through submit.ts.

import type { Ledger } from "../ledger/ledger.ts";
import type { ScheduleRunRow } from "../ledger/rows.ts";
import { probeProcess } from "../host/proc.ts";
import { settleWaitingRuns } from "./dependencies.ts";
import { expireLeases } from "./expiry.ts";
import { leaseNext, type Lessee } from "./lease.ts";
import { moveRun } from "./move.ts";
import { parseStoredRequest } from "./request.ts";
import { queueRetry } from "./retry.ts";
import { settleRun } from "./settle.ts";
import type { LegStart } from "./start.ts";

export interface ScheduleEnv {
  ledger: Ledger;
  lessee: Lessee;
  /** Starts a leased run's detached leg (start.ts); resolves once its setup committed, or with why not. */
  startLeg: (run: ScheduleRunRow) => Promise<LegStart>;
  /** One line per action, as the watcher logs them. */
  log: (entry: { action: string; [field: string]: unknown }) => void;
  /** Stop leasing (the watcher is stopping): a started leg runs on, nothing new starts. */
  stopping?: () => boolean;
}

export interface ScheduleStep {
  readonly name: string;
  /** One runner for the whole fleet does it: on PostgreSQL only the elected watcher runs it (§14 "Many hosts"). */
  readonly fleetWide?: boolean;
  run(env: ScheduleEnv): Promise<Record<string, number>>;
}

/**
 * A watcher leaves a live foreground waiter's run to it; once that li process is gone, the run is anybody's
 * on its host. `waitingHere`: the run is left to a live waiter of this host, whose death no commit tells of
 * (a kill -9), so the watcher looks again within a second rather than a safety poll.
 */
export function dispatchVerdict(run: ScheduleRunRow, hostId: string): { may: boolean; waitingHere: boolean } {
  let foreground;
  try {
    foreground = parseStoredRequest(run.id, run.request_json).foreground;
  } catch {
    return { may: false, waitingHere: false }; // a request nobody could run: left for a person (li kill) rather than failed by guesswork
  }
  if (!foreground) return { may: true, waitingHere: false };
  if (foreground.host_id !== hostId) return { may: false, waitingHere: false };
  const seen = probeProcess(foreground.pid, foreground.start_ticks);
  const may = seen === "dead" || seen === "reused";
  return { may, waitingHere: !may };
}

/** dispatch's count of candidates left to a live foreground waiter of this host: not work done, a reason to look again soon. */
export const FOREGROUND_WAITING = "foreground_waiting";

const settleEnded: ScheduleStep = {
  name: "settle",
  async run({ ledger, log }) {
    let settled = 0;
    for (const run of await ledger.backend.schedule.runsWithEndedSession(200)) {
      const applied = await settleRun(ledger, run.id);
      if (!applied) continue;
      settled++;
      log({ action: "schedule_settle", run_id: run.id, status: applied.status, reason: applied.reasonCode });
    }
    return { settled };
  },
};

const expire: ScheduleStep = {
  name: "expire_leases",
  fleetWide: true,
  async run({ ledger, log }) {
    await ledger.ready();
    const summary = await expireLeases(ledger, ledger.now());
    if (summary.requeued + summary.failed + summary.settled > 0) log({ action: "schedule_expire", ...summary });
    return { ...summary };
  },
};

const retries: ScheduleStep = {
  name: "retries",
  async run({ ledger, log }) {
    let queued = 0;
    for (const parent of await ledger.backend.schedule.dueRetries(ledger.now(), 100)) {
      const next = await queueRetry(ledger, parent);
      if (!next) continue;
      queued++;
      log({ action: "schedule_retry", run_id: next.id, parent_id: parent.id, queue: next.queue });
    }
    return { queued };
  },
};

const dependencies: ScheduleStep = {
  name: "dependencies",
  async run({ ledger, log }) {
    const summary = await settleWaitingRuns(ledger);
    if (summary.queued + summary.skipped > 0) log({ action: "schedule_dependencies", ...summary });
    return summary;
  },
};

/** Fails a leased run whose leg could not be started (nothing would ever renew its lease or end it otherwise). */
async function failUnstarted(ledger: Ledger, run: ScheduleRunRow, message: string): Promise<void> {
  const applied = await ledger.transact(async (tx, ctx) => {
    await tx.readStatus("schedule_run", run.id);
    const now = await tx.schedule.getRun(run.id);
    if (!now || now.status !== "running" || now.session_id !== null) return null;
    return moveRun(tx, ctx, run.id, { from: ["running"], to: "failed", reasonCode: "run.failed.exception", reasonSummary: `its leg could not be started: ${message}`, extra: { ended_at: ctx.now(), lease_expires_at: null } });
  });
  if (applied) ledger.emitTerminal(applied);
}

const dispatch: ScheduleStep = {
  name: "dispatch",
  async run(env) {
    const { ledger, lessee, log } = env;
    let started = 0;
    let refused = 0;
    let waiting = 0;
    const mayTake = (c: ScheduleRunRow) => {
      const verdict = dispatchVerdict(c, lessee.hostId);
      if (verdict.waitingHere) waiting++;
      return verdict.may;
    };
    // One read first, of every queue: one with nothing queued (or paused) costs no write transaction (no write
    // lock on SQLite, no row lock on PostgreSQL), and the read is one round trip however many queues there are.
    for (const queue of await ledger.backend.schedule.queuesToDispatch()) {
      for (;;) {
        if (env.stopping?.()) return { started, refused, [FOREGROUND_WAITING]: waiting };
        const run = await leaseNext(ledger, queue.name, lessee, { mayTake });
        if (!run) break;
        const start = await env.startLeg(run);
        if (start.ok) {
          started++;
          log({ action: "schedule_start", run_id: run.id, queue: queue.name, session_id: start.sessionId, attempt: run.attempts });
        } else {
          refused++;
          // A supervisor killed before it reported leaves the run to its lease (queued again when it expires).
          log({ action: "schedule_start_failed", run_id: run.id, queue: queue.name, message: start.message, ...(start.died ? { left_to_lease: true } : {}) });
          if (!start.died) await failUnstarted(ledger, run, start.message);
        }
      }
    }
    return { started, refused, [FOREGROUND_WAITING]: waiting };
  },
};

/** The steps, in order. A new kind of due work goes in before `dispatch`, so what it queues starts in the same pass. */
export const SCHEDULE_STEPS: readonly ScheduleStep[] = Object.freeze([settleEnded, expire, retries, dependencies, dispatch]);

/** The steps a watcher that is not the fleet's elected one runs. */
export const HOST_SCHEDULE_STEPS: readonly ScheduleStep[] = Object.freeze(SCHEDULE_STEPS.filter((step) => !step.fleetWide));

/**
 * Records this host's labels (for the submit's "no host has the label" warning), at most once a minute; a
 * host that offers none has nothing to record (a watcher with nothing to do writes nothing).
 */
let hostRecordedAt = -Infinity;
async function recordHost(ledger: Ledger, lessee: Lessee): Promise<void> {
  if (lessee.labels.length === 0) return;
  const now = ledger.now();
  if (now - hostRecordedAt < 60) return;
  await ledger.transact(async (tx) => tx.schedule.recordHost({ host_id: lessee.hostId, host_name: lessee.hostName ?? null, labels: JSON.stringify(lessee.labels), seen_at: now }));
  hostRecordedAt = now;
}

/** One pass of every step; a failing step is reported and the next still runs. */
export async function runSchedulePass(env: ScheduleEnv, steps: readonly ScheduleStep[] = SCHEDULE_STEPS): Promise<{ counts: Record<string, number>; errors: { step: string; error: unknown }[] }> {
  const counts: Record<string, number> = {};
  const errors: { step: string; error: unknown }[] = [];
  try {
    await env.ledger.ready();
    await recordHost(env.ledger, env.lessee);
  } catch (error) {
    errors.push({ step: "record_host", error });
  }
  const runStep = async (step: ScheduleStep): Promise<boolean> => {
    let changed = false;
    try {
      for (const [key, n] of Object.entries(await step.run(env))) {
        counts[`${step.name}.${key}`] = (counts[`${step.name}.${key}`] ?? 0) + n;
        if (n > 0) changed = true;
      }
    } catch (error) {
      errors.push({ step: step.name, error });
    }
    return changed;
  };
  // Dispatch first: a run just submitted (the wake-up its commit sent) is leased before the other steps'
  // reads, which it does not need; those steps may free a slot or queue a run, so dispatch runs again
  // after them only when one of them changed something (an idle pass costs no more statements).
  const last = steps.at(-1);
  const dispatchFirst = last?.name === "dispatch" ? last : null;
  if (dispatchFirst) await runStep(dispatchFirst);
  let changed = false;
  for (const step of dispatchFirst ? steps.slice(0, -1) : steps) if (await runStep(step)) changed = true;
  if (dispatchFirst && changed) await runStep(dispatchFirst);
  return { counts, errors };
}
