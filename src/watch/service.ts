// The `li watch` loop (SPEC §12.6): delivery on every wake-up, the sweeps every sweep interval, a bounded stop.

import type { Ledger } from "../ledger/ledger.ts";
import type { ChangeWake } from "../ledger/wake.ts";
import { WatcherLockLostError, type WatcherLock } from "../ledger/watcher-lock.ts";
import { deliverOnce, nextDeliveryDueAt, type DeliverOptions } from "../notify/deliver.ts";
import type { PassSummary } from "../notify/engine.ts";
import { linkedFinalizer } from "../sweeps/linked.ts";
import { orphanRunDirs } from "../sweeps/orphan-run-dirs.ts";
import { prune, type PruneProgress } from "../sweeps/prune.ts";
import { reaper } from "../sweeps/reaper.ts";
import { hostEnv, type SweepEnv } from "../sweeps/sweep.ts";
import { ExitCode, LedgerUnavailableError } from "../util/errors.ts";
import type { WatchLog } from "./log.ts";
import { OutageLog } from "./outage.ts";
import { watchSpool } from "./spool-wake.ts";
import type { ReplayHooks } from "../spool/replay.ts";
import { startUpDone } from "../util/jit.ts";
import { FOREGROUND_WAITING, HOST_SCHEDULE_STEPS, runSchedulePass, SCHEDULE_STEPS, type ScheduleEnv } from "../schedule/pass.ts";

export interface WatchConfig {
  /** One pass of everything, then return. */
  once: boolean;
  sweepIntervalSeconds: number;
  phantomGraceSeconds: number;
  phantomHours: number;
  /** Null: never prune (a watcher installed for notices never deletes history by surprise). */
  pruneKeepDays: number | null;
  /**
   * The safety poll between wake-ups: the net for a wake-up lost, not what brings timed work round (the
   * watcher sleeps until its next delivery retry, expiring claim, run retry, lease expiry or cron fire).
   * Defaults to DEFAULT_POLL_SECONDS while wake-ups hold, and to one second while they do not (no file
   * watching, a LISTEN down).
   */
  pollSeconds?: number;
  /**
   * How often a watcher that is not the fleet's elected one tries the election (§14 "Many hosts"): a dead
   * leader's fleet-wide sweeps are taken over within this. Defaults to 30 s. Only where the lock offers an
   * election (PostgreSQL); elsewhere the one watcher runs everything.
   */
  fleetLeaseSeconds?: number;
}

export interface WatchDeps {
  ledger: Ledger;
  /** Database-change wake-ups; `pollingOnly()` when files cannot be watched. */
  wake: ChangeWake;
  /** This host's watcher lock, checked before every pass (a PostgreSQL session can drop and be taken over). */
  lock?: WatcherLock;
  log: WatchLog;
  /** Aborted on SIGINT/SIGTERM: the work in flight finishes (bounded by the handler budget), nothing new starts. */
  signal: AbortSignal;
  /** The machine the sweeps probe and signal on; defaults to this host. */
  sweepEnv?: SweepEnv;
  /** Options of every delivery pass (host, budget, `$LI_HOME`). */
  delivery?: DeliverOptions;
  /** RUNS_ROOT: where the orphan sweep looks for run directories of legs killed before their setup. */
  runsRoot?: string;
  /** Monotonic milliseconds for scheduling; injectable so tests control when sweeps fall due. */
  clockMs?: () => number;
  /** The prune pass's progress (a foreground watcher on a terminal draws it on stderr); `done` after each pass. */
  pruneProgress?: { update: (progress: PruneProgress) => void; done: () => void };
  /** This host's spool (`$LI_HOME/spool`), replayed on every pass (§17); absent: no replay. */
  spoolDir?: string;
  /** Test seam between a replayed entry's commit and the removal of its file. */
  replayHooks?: ReplayHooks;
  /** Scheduled runs (§19): leased and started on every pass when given (li watch always gives it). */
  schedule?: Omit<ScheduleEnv, "ledger" | "log" | "stopping">;
}

export interface WatchReport {
  passes: number;
  sweeps: number;
  delivered: number;
  failed: number;
  dead: number;
  reaped: number;
  finalized: number;
  pruned_sessions: number;
  /** Run directories of legs killed before their setup, removed by the orphan sweep. */
  removed_run_dirs: number;
  /** Spooled outcomes recorded (§17). */
  replayed: number;
  /** Due times of cron schedules this watcher decided: fired, or recorded skipped (§19). */
  schedule_fires: number;
  /** Legs started for leased scheduled runs (§19). */
  started_runs: number;
  errors: number;
  /** Of `errors`, those where the ledger itself could not be read or written (full, read-only…). */
  ledger_errors: number;
  /** `lock_lost`: another watcher of this host took the lock while this one had lost it; this one stopped. */
  ended: "once" | "signal" | "lock_lost";
}

/**
 * `li watch --once`'s exit code (for cron): 0 a clean pass, 78 when the ledger itself could not be
 * written (the same code as every other command), 1 for any other error the pass logged.
 */
export function onceExitCode(report: Pick<WatchReport, "errors" | "ledger_errors">): number {
  if (report.errors === 0) return ExitCode.ok;
  return report.ledger_errors > 0 ? ExitCode.unavailable : ExitCode.failure;
}

/** The default safety poll while wake-ups hold (§14 "Many hosts": LISTEN is the wake-up, the poll the net). */
export const DEFAULT_POLL_SECONDS = 30;
/** The poll while no wake-up holds, and the retry of a pass that could not reach the ledger. */
const UNWATCHED_POLL_MS = 1000;

/** Handler pairs per delivery pass; a full pass is followed at once by another. */
const DELIVERY_LIMIT = 64;

/** Thrown from the prune's between-batch hook to stop after the batch in flight. */
class StopRequested extends Error {
  constructor() {
    super("stop requested");
  }
}

const message = (error: unknown) => (error instanceof Error ? error.message : String(error));

/**
 * Runs the watcher until `signal` aborts (or one pass with `once`). Every wake-up (a commit, or the
 * safety poll) runs the delivery engine; every sweep interval runs, in order, the linked-session
 * finalizer (first, so a session whose linked session just ended takes that outcome rather than
 * being reaped as a phantom), the phantom reaper, the orphan run-directory sweep (legs killed before
 * their setup) and, when configured, the prune (never a pruned leg's files).
 * Nothing is restored on start: what is owed is simply found by the delivery engine.
 */
export async function runWatch(deps: WatchDeps, config: WatchConfig): Promise<WatchReport> {
  startUpDone(); // a service: its passes are compiled as usual
  const { ledger, wake, log, signal } = deps;
  const clockMs = deps.clockMs ?? (() => performance.now());
  const env = deps.sweepEnv ?? hostEnv();
  /** The poll now: as configured, else the default while wake-ups hold and a second while they do not. */
  const pollMs = () => (config.pollSeconds !== undefined ? config.pollSeconds * 1000 : wake.watching ? DEFAULT_POLL_SECONDS * 1000 : UNWATCHED_POLL_MS);
  const intervalMs = config.sweepIntervalSeconds * 1000;
  const fleetLeaseMs = (config.fleetLeaseSeconds ?? 30) * 1000;
  /**
   * Whether this watcher runs the fleet-wide sweeps (burying expired claims, re-queuing expired leases,
   * cron fires, the prune): the elected watcher on PostgreSQL, the one watcher on SQLite.
   */
  const election = deps.lock?.lead ? deps.lock : null;
  let leading = election === null;
  let nextElectionAt = clockMs();
  const report: WatchReport = { passes: 0, sweeps: 0, delivered: 0, failed: 0, dead: 0, reaped: 0, finalized: 0, pruned_sessions: 0, removed_run_dirs: 0, replayed: 0, schedule_fires: 0, started_runs: 0, errors: 0, ledger_errors: 0, ended: config.once ? "once" : "signal" };
  const availability = new Availability(ledger);
  const outage = new OutageLog(log, clockMs);
  /** When the current pass began: an outage met in it started no earlier (OutageLog.failed). */
  let passStartedMs = clockMs();
  const fail = (what: string, error: unknown) => {
    report.errors++;
    // The backend names the ledger and the reason (disk full, read-only) for its own failures. Every
    // failure counts; an outage is logged when it starts and when it ends, not once per pass.
    if (error instanceof LedgerUnavailableError) {
      report.ledger_errors++;
      if (error.unreachable) availability.lost();
      outage.failed(what, message(error), passStartedMs);
      return;
    }
    log({ action: "error", during: what, message: message(error) });
  };
  const stopped = new Promise<void>((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener("abort", () => resolve(), { once: true });
  });

  const reaperOptions = reaper.validate({ phantomGraceSeconds: config.phantomGraceSeconds, phantomHours: config.phantomHours });
  const orphanOptions = orphanRunDirs.validate({});
  const pruneOptions = config.pruneKeepDays === null ? null : prune.validate({ keepDays: config.pruneKeepDays, files: false });

  /** Spooled outcomes first, so a leg that finished during an outage is recorded before the reaper judges it. */
  async function replayPass(): Promise<void> {
    if (!deps.spoolDir) return;
    try {
      const { replaySpool } = await import("../spool/replay.ts");
      const replayed = await replaySpool(ledger, { spoolDir: deps.spoolDir, ...(deps.replayHooks ? { hooks: deps.replayHooks } : {}) });
      for (const r of replayed.refused) log({ action: "spool_refused", file: r.file, why: r.problem });
      for (const a of replayed.actions) log({ action: "replay", entry: a.entry_id, session_id: a.session_id, result: a.result, status: a.status });
      report.replayed += replayed.replayed;
      if (replayed.error) fail("replay", replayed.error);
      else {
        outage.succeeded("replay");
        if (replayed.actions.length > 0) availability.reached();
      }
    } catch (error) {
      fail("replay", error);
    }
  }

  /**
   * Cron schedules due by the ledger's clock. A watcher that knows the earliest due time asks the ledger
   * again only then, or after a commit (a schedule added, resumed, or decided by another watcher wakes it:
   * the file watch on SQLite, the schedules trigger's NOTIFY on PostgreSQL); without wake-ups, every pass.
   */
  const cron: { seen: { generation: number; nextDueAt: number | null } | null } = { seen: null };
  async function cronPass(generation: number): Promise<void> {
    if (!leading) return;
    const seen = cron.seen;
    if (seen && wake.watching && seen.generation === generation && (seen.nextDueAt === null || ledger.now() < seen.nextDueAt)) return;
    try {
      await ledger.ready();
      const { firePass } = await import("../schedule/fire.ts");
      const { queueSubmit } = await import("../schedule/submit-fire.ts");
      const fired = await firePass(ledger, ledger.now(), { hostId: env.hostId, submit: queueSubmit(ledger) });
      for (const a of fired.actions) log({ action: "schedule_fire", schedule: a.schedule, due_at: a.due_at, outcome: a.outcome, run_id: a.run_id });
      report.schedule_fires += fired.actions.length;
      for (const e of fired.errors) fail(`cron:${e.schedule}`, e.error);
      if (fired.errors.length === 0) outage.succeeded("cron");
      cron.seen = { generation, nextDueAt: fired.nextDueAt };
    } catch (error) {
      cron.seen = null;
      fail("cron", error);
    }
  }

  /** A queued run is left to a live foreground waiter of this host: its death (a kill -9) commits nothing, so look again within a second. */
  let foregroundWaiting = false;
  /** Scheduled runs: settle, expire, retry, dependencies, then lease and start what this host may run. */
  async function schedulePass(): Promise<void> {
    if (!deps.schedule) return;
    try {
      const pass = await runSchedulePass({ ...deps.schedule, ledger, log, stopping: () => signal.aborted }, leading ? SCHEDULE_STEPS : HOST_SCHEDULE_STEPS);
      report.started_runs += pass.counts["dispatch.started"] ?? 0;
      const waiting = `dispatch.${FOREGROUND_WAITING}`;
      foregroundWaiting = (pass.counts[waiting] ?? 0) > 0;
      for (const [key, n] of Object.entries(pass.counts)) if (key !== waiting) activity += n;
      for (const { step, error } of pass.errors) fail(`schedule:${step}`, error);
      if (pass.errors.length === 0) outage.succeeded("schedule");
    } catch (error) {
      fail("schedule", error);
    }
  }

  async function deliveryPass(): Promise<void> {
    for (;;) {
      let pass: PassSummary;
      try {
        pass = await deliverOnce(ledger, { limit: DELIVERY_LIMIT, ...deps.delivery, bury: leading });
        availability.reached();
        outage.succeeded("deliver");
      } catch (error) {
        fail("deliver", error);
        return;
      }
      for (const o of pass.outcomes) {
        log({
          action: "deliver",
          event_id: o.transitionId,
          consumer: o.consumer,
          state: o.state,
          ...(o.result.ok ? { pid: o.result.pid } : { why: o.result.why, error: o.result.error }),
        });
      }
      if (pass.error) fail("deliver", pass.error);
      report.delivered += pass.delivered;
      report.failed += pass.failed;
      report.dead += pass.dead;
      // A full pass may have left more behind; a pass that only met others' claims waits for them to expire.
      const full = pass.outcomes.length > 0 && pass.outcomes.length + pass.skipped_claimed >= (deps.delivery?.limit ?? DELIVERY_LIMIT);
      if (!full || signal.aborted) return;
    }
  }

  async function sweepPass(): Promise<void> {
    report.sweeps++;
    try {
      // Handlers whose deliverer was killed (a watcher's kill -9) die with it (§20): ended before any claim of theirs can expire.
      const { endOrphanHandlers } = await import("../notify/orphans.ts");
      for (const h of endOrphanHandlers()) log({ action: "end_orphan_handler", pid: h.pid, pgid: h.pgid, owner_pid: h.owner.pid });
    } catch (error) {
      fail("orphan_handlers", error);
    }
    try {
      // Every sweep judges ages at ledger.now(): on PostgreSQL the server's clock, measured on connecting.
      await ledger.ready();
      const linked = await linkedFinalizer.runOnce(ledger, ledger.now(), { dryRun: false }, env);
      for (const a of linked.actions) {
        log({ action: "finalize_linked", session_id: a.session_id, linked_session_id: a.linked_session_id, linked_status: a.linked_status, status: a.status, reason: a.reason_code, applied: a.applied, ...(a.conflict ? { conflict: a.conflict } : {}) });
      }
      report.finalized += linked.finalized;
      outage.succeeded("finalize_linked");
    } catch (error) {
      fail("finalize_linked", error);
    }
    if (signal.aborted) return;
    try {
      // After a failure, the reaper judges nothing until the ledger takes a write again: that moment is the regain.
      await availability.confirm();
      const reachableSince = await availability.since();
      if (reachableSince !== null && availability.justRegained()) log({ action: "ledger_regained", heartbeat_ages_from: reachableSince });
      const reaped = await reaper.runOnce(ledger, ledger.now(), reaperOptions, reachableSince === null ? env : { ...env, reachableSince });
      for (const a of reaped.actions) {
        log({
          action: "reap",
          session_id: a.session_id,
          leg_id: a.leg_id,
          status: a.status,
          reason: a.reason_code,
          applied: a.applied,
          age_seconds: Math.round(a.age_seconds),
          ...(a.killed ? { killed_pgid: a.killed.pgid ?? null } : {}),
          ...(a.conflict ? { conflict: a.conflict } : {}),
        });
      }
      report.reaped += reaped.swept;
      outage.succeeded("reap");
    } catch (error) {
      fail("reap", error);
    }
    if (signal.aborted) return;
    try {
      const orphans = await orphanRunDirs.runOnce(ledger, ledger.now(), orphanOptions, { runsRoot: deps.runsRoot ?? null });
      for (const dir of orphans.removed) log({ action: "remove_orphan_run_dir", path: dir });
      report.removed_run_dirs += orphans.removed.length;
      outage.succeeded("orphan_run_dirs");
    } catch (error) {
      fail("orphan_run_dirs", error);
    }
    if (deps.spoolDir) {
      try {
        // The spool space of legs killed before they could give it back (§20).
        const { sweepReservations } = await import("../spool/reserve.ts");
        const gone = sweepReservations(deps.spoolDir, (owner) => {
          const seen = env.probe(owner.pid, owner.startTicks);
          return seen === "dead" || seen === "reused";
        });
        for (const file of gone) log({ action: "remove_spool_reservation", path: file });
      } catch (error) {
        fail("spool_reservations", error);
      }
    }
    if (pruneOptions === null || !leading || signal.aborted) return;
    try {
      let pruned: Awaited<ReturnType<typeof prune.runOnce>>;
      try {
        pruned = await prune.runOnce(ledger, ledger.now(), pruneOptions, {
          hooks: {
            beforeBatch: () => {
              if (signal.aborted) throw new StopRequested();
            },
          },
          ...(deps.pruneProgress ? { onProgress: deps.pruneProgress.update } : {}),
        });
      } finally {
        deps.pruneProgress?.done();
      }
      if (pruned.sessions > 0 || pruned.skipped_owed > 0 || pruned.rolled_back > 0) {
        log({ action: "prune", keep_days: pruned.keep_days, sessions: pruned.sessions, transitions: pruned.transitions, legs: pruned.legs, skipped_owed: pruned.skipped_owed, rolled_back: pruned.rolled_back });
      }
      report.pruned_sessions += pruned.sessions;
      outage.succeeded("prune");
    } catch (error) {
      if (!(error instanceof StopRequested)) fail("prune", error);
    }
  }

  /** Whether this watcher still holds its host's lock; false skips the pass (the next wake-up or poll asks again). */
  async function lockHeld(): Promise<boolean> {
    try {
      await deps.lock?.ensureHeld();
      outage.succeeded("lock");
      return true;
    } catch (error) {
      if (error instanceof WatcherLockLostError) {
        report.ended = "lock_lost";
        log({ action: "lock_lost", message: error.message });
      } else fail("lock", error);
      return false;
    }
  }

  /**
   * The election, after the lock's check: a leader knows it leads until its lock's session drops (no
   * query); a follower tries once per fleet lease. Changes are logged (fleet_elected, fleet_lost).
   */
  async function elect(): Promise<void> {
    if (election === null) return;
    if (!leading && clockMs() < nextElectionAt) return;
    let now: boolean;
    try {
      now = await election.lead!();
      outage.succeeded("election");
    } catch (error) {
      now = false;
      fail("election", error);
    }
    if (now && !leading) log({ action: "fleet_elected" });
    if (!now && leading) log({ action: "fleet_lost" });
    if (!now && leading) cron.seen = null;
    leading = now;
    if (!leading) nextElectionAt = clockMs() + fleetLeaseMs;
  }

  /**
   * When timed work falls due without a commit (a delivery retry or an expiring claim; a run's retry or,
   * for the elected watcher, an expiring lease), on the ledger's clock. Asked again only after a pass that
   * followed a commit, did something, met an error or was itself woken by that time: an idle watcher's
   * poll costs no query for it.
   */
  const timed: { seen: { generation: number; leading: boolean; dueAt: number | null } | null } = { seen: null };
  /** Sum of what a pass did (its report's counters and the scheduler's counts): a change means ask again. */
  let activity = 0;
  const done = () => report.delivered + report.failed + report.dead + report.reaped + report.finalized + report.pruned_sessions + report.removed_run_dirs + report.replayed + report.schedule_fires + report.started_runs + report.errors + activity;
  async function timedPass(generation: number, doneBefore: number): Promise<void> {
    const seen = timed.seen;
    const stale = seen === null || !wake.watching || seen.generation !== generation || seen.leading !== leading || done() !== doneBefore || (seen.dueAt !== null && ledger.now() >= seen.dueAt);
    if (!stale) return;
    try {
      await ledger.ready();
      const now = ledger.now();
      const delivery = await nextDeliveryDueAt(ledger, now, { ...(deps.delivery?.hostId !== undefined ? { hostId: deps.delivery.hostId } : {}), bury: leading });
      const runs = deps.schedule ? await ledger.backend.schedule.nextTimedAt(now, leading) : null;
      const times = [delivery, runs].filter((t): t is number => t !== null);
      timed.seen = { generation, leading, dueAt: times.length === 0 ? null : Math.min(...times) };
    } catch (error) {
      timed.seen = null;
      fail("next_due", error);
    }
  }

  // A leg of this host that spools its outcome wakes the watcher (the poll is tens of seconds).
  const spoolWake = deps.spoolDir && !config.once ? watchSpool(deps.spoolDir) : null;
  let nextSweepAt = clockMs();
  for (;;) {
    if (signal.aborted) break;
    // Read before the work: a commit during the pass (including the pass's own) wakes the next one.
    const generation = wake.generation;
    const spooled = spoolWake?.generation ?? 0;
    passStartedMs = clockMs();
    const held = await lockHeld();
    const doneBefore = done();
    const ledgerErrorsBefore = report.ledger_errors;
    if (held) {
      await elect();
      await replayPass();
      await cronPass(generation);
      await schedulePass();
      if (clockMs() >= nextSweepAt) {
        await sweepPass();
        nextSweepAt = clockMs() + intervalMs;
        if (signal.aborted) break;
      }
      await deliveryPass();
      if (!config.once && !signal.aborted) await timedPass(generation, doneBefore);
      report.passes++;
    } else if (report.ended === "lock_lost") break;
    if (config.once) break;
    // A skipped pass (the lock could not be checked: the ledger is away) or one that could not reach the
    // ledger tries again after a second at most, not a whole poll: the sweep it owes is overdue, and waiting
    // until then would be no wait at all, a loop failing as fast as it can.
    const poll = pollMs();
    const retry = !held || report.ledger_errors !== ledgerErrorsBefore || foregroundWaiting ? Math.min(poll, UNWATCHED_POLL_MS) : poll;
    const untilLedger = (at: number | null | undefined) => (at == null ? retry : (at - ledger.now()) * 1000);
    const cronOrElectionMs = leading ? untilLedger(cron.seen?.nextDueAt) : nextElectionAt - clockMs();
    const waitMs = held ? Math.max(0, Math.min(retry, nextSweepAt - clockMs(), cronOrElectionMs, untilLedger(timed.seen?.dueAt))) : retry;
    await Promise.race([wake.changed(generation, waitMs), stopped, ...(spoolWake ? [spoolWake.changed(spooled)] : [])]);
  }
  spoolWake?.close();
  return report;
}

/**
 * When this watcher last regained the ledger after failing to reach it (§17), on the ledger's clock,
 * and when the ledger itself came up (PostgreSQL's start time): a heartbeat's age counts from the
 * later of the heartbeat and these, so no leg is reaped for heartbeats it could not write meanwhile.
 */
class Availability {
  private unreachable = false;
  private regainedAt: number | null = null;
  private announced = true;

  constructor(private readonly ledger: Ledger) {}

  /** A ledger call failed as unreachable. */
  lost(): void {
    this.unreachable = true;
  }

  /** A ledger call succeeded: the first one after a failure is the moment the ledger came back. */
  reached(): void {
    if (!this.unreachable) return;
    this.unreachable = false;
    this.regainedAt = this.ledger.now();
    this.announced = false;
  }

  /** After a failure, an empty write transaction (it takes the write lock) tells whether the ledger is back; throws if not. */
  async confirm(): Promise<void> {
    if (!this.unreachable) return;
    await this.ledger.backend.transaction(() => undefined);
    this.reached();
  }

  /** True once after each regain (for one log line). */
  justRegained(): boolean {
    if (this.announced) return false;
    this.announced = true;
    return true;
  }

  async since(): Promise<number | null> {
    const serverSince = (await this.ledger.backend.availableSince?.()) ?? null;
    if (serverSince === null) return this.regainedAt;
    return this.regainedAt === null ? serverSince : Math.max(serverSince, this.regainedAt);
  }
}
