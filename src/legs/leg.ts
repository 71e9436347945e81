// Runs ONE leg: setup, spawn in its own group, live capture, deadline and signals, heartbeat, then teardown.

import fs from "node:fs";
import path from "node:path";
import { isWithin } from "../contracts/containment.ts";
import type { Awaitable } from "../util/awaitable.ts";
import type { Ledger } from "../ledger/ledger.ts";
import type { TransactionOptions } from "../ledger/backend.ts";
import type { CompletionEvidence, EvidenceOptions } from "./evidence.ts";
import { pump, drainPumps, Tail, type Sink } from "./capture.ts";
import { streamSink, type StreamLimits } from "./stream-copy.ts";
import { removeRunDir } from "./rundir.ts";
import { commandEnv } from "./env.ts";
import { HEARTBEAT_INTERVAL_MS, startHeartbeat } from "./heartbeat.ts";
import { watchKillRequest, type KillRequestWatch } from "./kill-request.ts";
import { joinWatcher, watcherSocketPath, type WatcherLink } from "./watcher-link.ts";
import { commandExitCode, naturalTermination, type Termination } from "./outcome.ts";
import { readStartTicks } from "../host/proc.ts";
import type { ResumeSetup } from "./resume.ts";
import { newSessionRows, nodeMetadata, recordCommandMarkers, setupContinuation, setupNewSession, type AlsoInSetup, type LegIds, type LegPlan, type SpooledSetup } from "./setup.ts";
import { spawnCommand, SpawnError, type SpawnedCommand } from "./spawn.ts";
import type { AfterCommit, LegOutage, SpoolReservation, SpoolWhole, TeardownResult } from "./teardown/state.ts";
import { armDeadline, DEFAULT_KILL_GRACE_MS, GroupTerminator, LI_SIGNALS, LiSignalTrap } from "./signals.ts";
import { containmentMode, spawnContained, type LegProcesses } from "./leg-processes.ts";
import { endContainment, type EndedContainment } from "./leftovers.ts";
import { firstLockWaitMs, retryLockWaitMs, retryUnreachable } from "./ledger-retry.ts";
import { formatDuration } from "../util/duration.ts";
import type { LedgerUnavailableError } from "../util/errors.ts";
import { startUpDone } from "../util/jit.ts";
import { mark } from "../util/profile.ts";

/** Where a leg's live output and li's own notes go. */
export interface LegIo {
  /** The command's stdout, live (li's stdout; li's stderr with --json; nowhere when detached). */
  stdout: Sink;
  stderr: Sink;
  /** One line from li itself (warnings, teardown failures). */
  log: (line: string) => void;
}

/**
 * Test seams at the points where a kill -9 or a signal to li can fall (docs/architecture.md, "What a
 * kill -9 leaves behind"). Production passes none; tests pause there or kill li there.
 */
export interface LegHooks {
  /** The run directory is allocated; the setup transaction has not begun. */
  beforeSetup?(plan: LegPlan): Awaitable<void>;
  /** Setup committed (the session is running); nothing else of the leg has happened yet. */
  afterSetup?(plan: LegPlan): Awaitable<void>;
  /** Manifest, snapshot and onStarted are done; the command is about to be spawned. */
  beforeSpawn?(plan: LegPlan): Awaitable<void>;
  /**
   * The spawn is the very next call (synchronous: a kill -9 is the only thing that can fall here): the
   * leg's cgroup, when it has one, is made and still empty.
   */
  atSpawn?(plan: LegPlan, cgroup: string | null): void;
  /** The command runs; its markers are not recorded yet. */
  afterSpawn?(plan: LegPlan, pid: number): Awaitable<void>;
}

export interface LegOptions {
  ledger: Ledger | null;
  io: LegIo;
  env: Readonly<Record<string, string | undefined>>;
  /** Credential variables the command gets all the same (`--pass-env`); the others are stripped (§18). */
  passEnv?: readonly string[];
  stdin: "inherit" | "ignore";
  timeout: number | null;
  /** true: a timeout defers its terminal, another leg follows (§8.6). */
  mayDefer: boolean;
  evidenceCwd: string | null;
  baseRef: string | null;
  linkedSessionId: string | null;
  providerExitCodes: readonly number[];
  now: () => number;
  newId: () => string;
  killGraceMs?: number;
  /** A normal end stops what is still running in the leg after the grace (--stop-leftovers), instead of only listing it. */
  stopLeftovers?: boolean;
  drainGraceMs?: number;
  heartbeatMs?: number;
  tailBytes?: number;
  /** `$LI_HOME`, where this host's watcher listens for legs (§20); absent: the leg never looks for one. */
  watcherHome?: string;
  /** How much of the disk the stream copy may take (§20: `agent.stream_reserve`, `agent.stream_max`). */
  streamLimits?: StreamLimits;
  checkEvidence: (cwd: string, options: EvidenceOptions) => Promise<CompletionEvidence>;
  alsoInSetup?: AlsoInSetup;
  afterCommit: readonly AfterCommit[];
  /** Called once setup committed (or was skipped without persistence), before the command starts. */
  onStarted?: (plan: LegPlan, persisted: boolean) => void | Promise<void>;
  /** Detached: a failed persistence setup must stop the leg instead of running it unrecorded. */
  requirePersistence?: boolean;
  /** li's signals, trapped by the caller for all its legs; without one the leg traps its own, before setup. */
  signals?: LiSignalTrap;
  hooks?: LegHooks;
  /** Retrying and spooling when the ledger is unreachable at the end (§17); absent: reported unrecorded. */
  outage?: LegOutage;
  /** The ledger could not be opened and stayed unreachable (§17): a new leg runs and spools itself whole. */
  unreachable?: LedgerUnavailableError;
  /**
   * When a new leg stops waiting for its setup (monotonic ms on LegOutage.clockMs; §17), and whether the
   * ledger answered its first call: one that did not has had its connect timeout, so every setup attempt
   * is cut to what is left (the command starts within --ledger-retry plus one connect timeout).
   */
  setupDeadline?: { atMs: number; answered: boolean };
  /** The leg's registration as a spooled setup carries it (§17), when its setup never reached the ledger. */
  spoolRegistration?: (ids: LegIds) => SpooledSetup["registration"];
}

export interface LegOutcome {
  result: TeardownResult;
  termination: Termination;
  /** The session status when a continuation found the session no longer running (nothing ran). */
  stoppedBy: string | null;
  persisted: boolean;
  /** How a resumed leg's setup opened it (§10); null for other legs or without persistence. */
  resumed: ResumeSetup | null;
}

/** Persistence setup failed where it was required (a detached leg): nothing ran. */
export class PersistenceSetupError extends Error {
  override readonly name = "PersistenceSetupError";
}

type LegMode = "new" | "continue" | "resume";

interface OpenedRecord {
  /** null: the leg runs unrecorded (no ledger, or its setup failed). */
  ledger: Ledger | null;
  resumed: ResumeSetup | null;
  /** A continuation found the session no longer running: its status, and nothing runs. */
  stopped: string | null;
  /** The ledger stayed unreachable through setup (§17): the leg runs, and its whole record goes to the spool. */
  spoolWhole?: SpoolWhole;
}

/** The setup transaction of the leg's mode. A failure stops a leg that requires persistence; any other runs unrecorded. */
async function openRecord(ledger: Ledger, plan: LegPlan, mode: LegMode, o: LegOptions): Promise<OpenedRecord> {
  try {
    if (mode === "new") {
      await setupNewSession(ledger, plan, o.alsoInSetup, firstSetupOptions(o));
      return { ledger, resumed: null, stopped: null };
    }
    if (mode === "continue") return { ledger, resumed: null, stopped: await setupContinuation(ledger, plan, o.alsoInSetup) };
    const previous = plan.sessionId;
    const resumed = await (await import("./resume.ts")).setupResume(ledger, plan, o.newId, o.alsoInSetup);
    if (resumed === "created") o.io.log(`resume: session ${previous} no longer exists; branch ${plan.branchId} continues under the new session ${plan.sessionId}`);
    if (resumed === "lost_race") o.io.log(`resume: session ${plan.sessionId} was changed by another process during setup; this leg runs, but is not its current leg`);
    return { ledger, resumed, stopped: null };
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    if (o.requirePersistence) {
      // Nothing runs and no row names the directory allocated for the leg: it goes now, not after the
      // orphan sweep's hour (its setup-pending marker would otherwise leave it to li watch).
      removeRunDir(plan.run.stateRoot);
      throw new PersistenceSetupError(`persistence setup failed: ${why}`);
    }
    const failure = ledger.backend.ledgerError(error);
    // §17: a new leg waits for an unreachable ledger, then runs with its whole record bound for the spool.
    if (mode === "new" && failure?.unreachable && o.outage) return waitForSetup(ledger, plan, o, o.outage, failure);
    o.io.log(`warning: persistence setup failed (${why}); the command runs unrecorded`);
    return { ledger: null, resumed: null, stopped: null };
  }
}

/** Without a ledger: unrecorded, or, when it stayed unreachable (§17), bound for the spool whole. */
function unopened(plan: LegPlan, mode: LegMode, o: LegOptions): OpenedRecord {
  if (mode !== "new" || !o.unreachable || !o.outage) return { ledger: null, resumed: null, stopped: null };
  return { ledger: null, resumed: null, stopped: null, spoolWhole: { setup: { ...newSessionRows(plan), registration: o.spoolRegistration?.(plan) ?? null }, error: o.unreachable } };
}

/** What is left of the setup's deadline, in ms (null: no deadline, the leg does not wait). */
function setupLeftMs(o: LegOptions): number | null {
  if (!o.setupDeadline) return null;
  return Math.max(0, o.setupDeadline.atMs - (o.outage?.clockMs ?? (() => performance.now()))());
}

/**
 * A new leg's first setup attempt: it waits for a lock at most the whole budget (never the busy timeout's
 * eight retries), and, once the ledger did not answer the leg's first call, it is cut to what is left.
 */
function firstSetupOptions(o: LegOptions): TransactionOptions | undefined {
  const left = setupLeftMs(o);
  if (left === null) return undefined;
  return { lockWaitMs: firstLockWaitMs(left), ...(o.setupDeadline!.answered ? {} : { withinMs: left }) };
}

/** Retries a new leg's setup for --ledger-retry; still unreachable, the leg runs and spools itself whole. */
async function waitForSetup(ledger: Ledger, plan: LegPlan, o: LegOptions, outage: LegOutage, failure: LedgerUnavailableError): Promise<OpenedRecord> {
  if (failure.diskFull) {
    // §20: a full disk is no outage a retry rides out; the command runs now.
    o.io.log(`warning: ${failure.message}; a full disk is not waited for: the command runs now, and its whole leg is spooled for li watch to record`);
    return { ledger: null, resumed: null, stopped: null, spoolWhole: { setup: { ...newSessionRows(plan), registration: o.spoolRegistration?.(plan) ?? null }, error: failure } };
  }
  if (outage.retrySeconds > 0) o.io.log(`the ledger is unreachable (${failure.message}); retrying the setup for up to ${formatDuration(outage.retrySeconds)}`);
  const attempt = await retryUnreachable<void>(
    async (leftMs) => {
      try {
        // Bounded by what is left of the budget: a default SQLite attempt could wait eight busy timeouts.
        await setupNewSession(ledger, plan, o.alsoInSetup, { lockWaitMs: retryLockWaitMs(leftMs), withinMs: leftMs });
        return { ok: true, value: undefined };
      } catch (error) {
        const f = ledger.backend.ledgerError(error);
        if (!f) throw error;
        return { ok: false, retry: f.unreachable, error: f };
      }
    },
    // What is left of --ledger-retry since the leg's first ledger call (all of it without a deadline).
    { seconds: (setupLeftMs(o) ?? outage.retrySeconds * 1000) / 1000, ...(outage.clockMs ? { clockMs: outage.clockMs } : {}), ...(outage.sleep ? { sleep: outage.sleep } : {}) },
  );
  if (attempt.ok) return { ledger, resumed: null, stopped: null };
  const last = attempt.error as LedgerUnavailableError;
  if (!last.unreachable) {
    o.io.log(`warning: persistence setup failed (${last.message}); the command runs unrecorded`);
    return { ledger: null, resumed: null, stopped: null };
  }
  o.io.log(`the ledger is still unreachable (${last.message}); the command runs, and its whole leg is spooled for li watch to record`);
  return { ledger: null, resumed: null, stopped: null, spoolWhole: { setup: { ...newSessionRows(plan), registration: o.spoolRegistration?.(plan) ?? null }, error: last } };
}

export async function runLeg(plan: LegPlan, mode: LegMode, o: LegOptions): Promise<LegOutcome> {
  // Before the first commit: a signal from here on ends the leg through its teardown (§8.1), never li outright.
  const signals = o.signals ?? new LiSignalTrap();
  try {
    return await runTrappedLeg(plan, mode, o, signals);
  } finally {
    if (!o.signals) signals.release();
  }
}

async function runTrappedLeg(plan: LegPlan, mode: LegMode, o: LegOptions, signals: LiSignalTrap): Promise<LegOutcome> {
  await o.hooks?.beforeSetup?.(plan);
  const { ledger, resumed, stopped, spoolWhole } = o.ledger ? await openRecord(o.ledger, plan, mode, o) : unopened(plan, mode, o);
  mark("setup committed");
  if (stopped !== null) {
    // The session ended before this continuation could join it: no leg row was written and nothing runs,
    // so the directory allocated for the leg goes too.
    removeRunDir(plan.run.stateRoot);
    const own = { status: stopped, reasonCode: "" };
    return { result: { ...own, persisted: "winner", own, exitCode: null, transition: null }, termination: "timeout", stoppedBy: stopped, persisted: true, resumed };
  }
  // Setup is done (recorded, or the leg runs unrecorded): the run directory is no orphan any more.
  clearSetupPending(plan, o.io.log);
  mark("setup-pending marker cleared");
  // Room for the outcome in the spool, taken before the command can fill the disk (§20).
  const reservation = ledger || spoolWhole ? await reserveSpool(plan, o) : null;
  mark("spool room reserved");
  try {
    return await runRecordedLeg(plan, o, signals, ledger, resumed, spoolWhole, reservation);
  } finally {
    reservation?.release();
  }
}

async function runRecordedLeg(plan: LegPlan, o: LegOptions, signals: LiSignalTrap, ledger: Ledger | null, resumed: ResumeSetup | null, spoolWhole: SpoolWhole | undefined, reservation: SpoolReservation | null): Promise<LegOutcome> {
  await o.hooks?.afterSetup?.(plan);
  const escalateFile = `${plan.run.stateRoot}/escalations.jsonl`;
  const { fd: streamFd, problem: runDirProblem } = prepareRunFiles(plan, ledger !== null, escalateFile, o.io.log);
  mark("manifest, snapshot, stream file");
  await o.onStarted?.(plan, ledger !== null);

  const toStream = streamSink(streamFd, plan.run.streamPath(plan.branchId), o.io.log, o.streamLimits);
  const tail = new Tail(o.tailBytes);
  let child: SpawnedCommand | null = null;
  let failure: string | null = null;
  let termination: Termination = "spawn_failed";
  let exitCode: number | null = null;
  let commandMarkers: { pid: number; startTicks: number | null } | undefined;
  let processes: LegProcesses | null = null;
  let contained: EndedContainment | null = null;
  // A kill request recorded on the leg (li kill from another host) stops it as li kill's SIGTERM would here.
  // A kill request recorded on the leg (li kill from another host) stops it as li kill's SIGTERM would here.
  const liveness = ledger ? ownLiveness(ledger, plan, o, () => signals.request("SIGTERM")) : null;
  // §20: where this host's watcher is listening, the leg is about to hand itself over, so it opens no LISTEN
  // of its own meanwhile (a second connection per leg in a burst); the watcher looks once for a kill request
  // recorded before the leg joined, and a join that fails starts the leg's own heartbeat and LISTEN.
  const budget = ledger?.backend.connections;
  const watcherListening = budget !== undefined && o.watcherHome !== undefined && fs.existsSync(watcherSocketPath(o.watcherHome, budget.key));
  if (!watcherListening) liveness?.start();
  let leaveWatcher = () => {};
  let terminator: GroupTerminator | null = null;
  let teardownModule: Promise<typeof import("./teardown/run.ts")> | null = null;
  try {
    await o.hooks?.beforeSpawn?.(plan);
    mark("kill-request watch, before the spawn");
    // A signal since the trap went up ends the leg here: the command is never started (no await from here to the spawn).
    const before = signals.pending;
    if (before !== null) {
      termination = LI_SIGNALS[before];
      o.io.log(`${before} before the command started: it was not started`);
    } else {
      try {
        const env = commandEnv(o.env, { sessionId: plan.sessionId, branchId: plan.branchId, runId: plan.runId, artifactRoot: plan.run.artifactRoot, escalateFile }, o.passEnv);
        // The leg owns every process the command starts (§8.7): its own cgroup where li can make one.
        const spawned = spawnContained({ runId: plan.runId, supervisorStartTicks: plan.supervisor.startTicks, startedAt: plan.startedAt }, containmentMode(o.env), (cgroup) => {
          o.hooks?.atSpawn?.(plan, cgroup);
          return spawnCommand(plan.argv, { cwd: plan.cwd, env, stdin: o.stdin, cgroup });
        });
        child = spawned.child;
        processes = spawned.processes;
        mark("cgroup made, command spawned");
      } catch (error) {
        if (!(error instanceof SpawnError)) throw error;
        failure = error.message;
        exitCode = error.exitCode;
        o.io.log(error.message);
      }
    }
    if (child) {
      // The teardown's modules (and the push's) load while the command runs, not on the path before it
      // starts: li's thread is idle until the command exits.
      teardownModule = loadTeardown(o.afterCommit);
      const pid = child.pid;
      terminator = new GroupTerminator(pid, o.killGraceMs, undefined, processes ?? undefined);
      signals.attach(terminator);
      const disarm = armDeadline(o.timeout, () => terminator?.stop("timeout", "SIGTERM"));
      const pumps = [pump(child.stdout, [o.io.stdout, toStream, (c) => tail.push(c)]), pump(child.stderr, [o.io.stderr, toStream])];
      await o.hooks?.afterSpawn?.(plan, pid);
      commandMarkers = { pid, startTicks: readStartTicks(pid) };
      if (ledger) await recordCommandMarkers(ledger, plan.legId, commandMarkers, processes?.scope ?? { containment: "group", cgroup: null }).catch(() => {});
      mark("command markers recorded");
      // §20: with a watcher on this host, it beats and listens for the leg, which gives its connections back.
      if (ledger && liveness && o.watcherHome) leaveWatcher = handToWatcher(ledger, plan, o.watcherHome, o, liveness, () => signals.request("SIGTERM"));
      // Either way the command runs holding no pooled connection: the next beat (or the final write) opens one.
      ledger?.backend.connections?.release();
      // The supervisor stays for as long as the command runs: from here on its hot paths (the output pumps) may be compiled.
      startUpDone();
      const exit = await child.exited;
      mark("command exited");
      disarm();
      await terminator.settle();
      contained = await endContainment(processes, child.usage(), {
        stopped: terminator.reason !== null,
        stopLeftovers: o.stopLeftovers === true,
        graceMs: o.killGraceMs ?? DEFAULT_KILL_GRACE_MS,
        log: o.io.log,
      });
      mark("containment ended (leftovers, usage, cgroup removed)");
      await drainPumps(pumps, o.drainGraceMs);
      mark("output drained");
      termination = terminator.reason ?? naturalTermination(exit.exitCode, exit.signalCode);
      exitCode = commandExitCode(exit.exitCode, exit.signalCode);
    }
  } finally {
    signals.detach();
    leaveWatcher();
    liveness?.stop();
    if (streamFd !== null) fs.closeSync(streamFd);
  }
  const { runTeardown } = await (teardownModule ?? loadTeardown(o.afterCommit));
  mark("teardown loaded");
  const result = await runTeardown({
    ledger,
    sessionId: plan.sessionId,
    branchId: plan.branchId,
    legId: plan.legId,
    deferred: o.mayDefer && termination === "timeout",
    termination,
    exitCode,
    failure,
    contract: plan.contract,
    artifactRoot: plan.run.artifactRoot,
    assistantText: tail.text(),
    assistantTruncated: tail.truncated,
    linkedSessionId: o.linkedSessionId,
    providerExitCodes: o.providerExitCodes,
    linkedRetry: { attempts: 3, intervalMs: 100 },
    evidenceCwd: o.evidenceCwd,
    baseRef: o.baseRef,
    escalateFile,
    ...(runDirProblem !== null ? { runDirProblem: { path: plan.run.stateRoot, error: runDirProblem, artifactRootGone: isWithin(plan.run.stateRoot, plan.run.artifactRoot) } } : {}),
    nodeMetadata: nodeMetadata(plan, commandMarkers),
    containment: contained,
    now: o.now,
    newId: o.newId,
    log: o.io.log,
    checkEvidence: o.checkEvidence,
    afterCommit: o.afterCommit,
    ...(o.outage ? { outage: o.outage } : {}),
    ...(spoolWhole ? { spoolWhole } : {}),
    ...(reservation ? { spoolReservation: reservation } : {}),
  });
  mark("teardown done");
  return { result, termination, stoppedBy: null, persisted: ledger !== null || result.persisted === "spooled", resumed };
}

/** The leg's own heartbeat and kill-request LISTEN, which can stop while a watcher does the work and start again. */
function ownLiveness(ledger: Ledger, plan: LegPlan, o: LegOptions, onKill: () => void): { start(): void; stop(): void } {
  let stopHeartbeat: (() => void) | null = null;
  let killRequest: KillRequestWatch | null = null;
  return {
    start() {
      if (killRequest) return;
      // §20: between its looks the leg holds no pooled connection, only the LISTEN's (one in all).
      const release = () => ledger.backend.connections?.release();
      killRequest = watchKillRequest(ledger.backend, plan.legId, onKill, release);
      const check = killRequest.check;
      stopHeartbeat = startHeartbeat(ledger.backend, plan.legId, { now: o.now, log: o.io.log, afterBeat: check, ...(o.heartbeatMs ? { intervalMs: o.heartbeatMs } : {}) });
    },
    stop() {
      stopHeartbeat?.();
      killRequest?.stop();
      stopHeartbeat = null;
      killRequest = null;
    },
  };
}

/**
 * Hands the leg to its host's watcher (§20): once taken on, the leg's own heartbeat and LISTEN stop and
 * its connections are given back. If the link is lost while the command runs (the watcher died), the leg
 * takes its heartbeat and LISTEN back at once, and the LISTEN's first read finds a kill request recorded
 * meanwhile. While no watcher has it (none answered, or the link was lost) it asks again every heartbeat
 * period, so a watcher started or restarted later takes it on. Returns the stop function.
 */
function handToWatcher(ledger: Ledger, plan: LegPlan, liHome: string, o: LegOptions, liveness: { start(): void; stop(): void }, onKill: () => void): () => void {
  const budget = ledger.backend.connections;
  if (!budget) return () => {};
  const socketPath = watcherSocketPath(liHome, budget.key);
  let ended = false;
  let link: WatcherLink | null = null;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const again = () => {
    if (ended) return;
    timer = setTimeout(() => void attempt(), o.heartbeatMs ?? HEARTBEAT_INTERVAL_MS);
    timer.unref?.();
  };
  const attempt = async () => {
    if (ended) return;
    const joined = fs.existsSync(socketPath) ? await joinWatcher(socketPath, plan.legId, onKill) : null;
    if (ended) {
      joined?.close();
      return;
    }
    if (!joined) {
      liveness.start();
      return again();
    }
    link = joined;
    liveness.stop();
    budget.release();
    void joined.lost.then(() => {
      link = null;
      if (ended) return;
      liveness.start();
      again();
    });
  };
  void attempt();
  return () => {
    ended = true;
    clearTimeout(timer);
    link?.close();
  };
}

/** The leg's spool space (§20); a disk that refuses it leaves the leg without one (its spool write may still find room). */
async function reserveSpool(plan: LegPlan, o: LegOptions): Promise<SpoolReservation | null> {
  if (!o.outage?.reserve) return null;
  try {
    return await o.outage.reserve(o.outage, plan.supervisor, o.now());
  } catch {
    return null;
  }
}

/** Starts loading the teardown and each after-commit hook's modules; a failed load is reported by the teardown's await. */
function loadTeardown(afterCommit: readonly AfterCommit[]): Promise<typeof import("./teardown/run.ts")> {
  const loading = import("./teardown/run.ts");
  loading.catch(() => {}); // awaited after the command exits; not an unhandled rejection meanwhile
  for (const hook of afterCommit) hook.warm?.();
  return loading;
}

/** Best-effort: a marker left behind only makes the orphan sweep look at the directory, and a leg row naming it keeps it. */
function clearSetupPending(plan: LegPlan, log: (line: string) => void): void {
  try {
    plan.run.clearSetupPending();
  } catch (error) {
    log(`warning: cannot remove ${plan.run.setupPendingPath}: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/**
 * The run directory's files, before the command starts; returns the stream file to copy the output
 * into. A disk that refuses them (full, read-only) never stops the leg (§16): one warning, the
 * directory li just made is removed (it holds nothing), and the command runs with its output passing
 * through, not kept (fd null); `problem` says why, for the leg's evidence (a detached leg's warning
 * would go to a log in that very directory).
 */
function prepareRunFiles(plan: LegPlan, persisted: boolean, escalateFile: string, log: (line: string) => void): { fd: number | null; problem: string | null } {
  const unwritable = (why: string) => {
    removeRunDir(plan.run.stateRoot);
    log(`warning: cannot write the run directory ${plan.run.stateRoot} (${why}); the command runs, its output is not kept there`);
    return { fd: null, problem: why };
  };
  if (plan.run.unwritable !== null) return unwritable(plan.run.unwritable);
  try {
    plan.run.writeManifest({
      session_id: plan.sessionId,
      branch_id: plan.branchId,
      leg_id: plan.legId,
      command: plan.argv,
      cwd: plan.cwd,
      started_at: plan.startedAt,
      persisted,
      escalate_file: escalateFile,
      ...(plan.invocationId !== null ? { invocation_id: plan.invocationId } : {}),
    });
    writeBranchSnapshot(plan);
    ensureOwnArtifactRoot(plan, log);
    return { fd: fs.openSync(plan.run.streamPath(plan.branchId), "a", 0o600), problem: null };
  } catch (error) {
    return unwritable(error instanceof Error ? error.message : String(error));
  }
}

/**
 * The command is told LI_ARTIFACT_ROOT, so a root in li's own runs directory exists before it starts
 * (writing `$LI_ARTIFACT_ROOT/report.md` must just work). A --save-dir elsewhere is the caller's and is
 * used as given. Best-effort: the verification reports a root that is missing.
 */
function ensureOwnArtifactRoot(plan: LegPlan, log: (line: string) => void): void {
  const runsRoot = path.dirname(plan.run.stateRoot);
  if (!isWithin(runsRoot, plan.run.artifactRoot)) return;
  try {
    plan.run.ensureArtifactRoot();
  } catch (error) {
    log(`warning: cannot create the artifact root ${plan.run.artifactRoot}: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/**
 * branches/<branch_id>.json: what a later `-r` needs when the ledger no longer holds the branch (§6, §10).
 * Best-effort: a leg never fails for its snapshot.
 */
function writeBranchSnapshot(plan: LegPlan): void {
  const snapshot = {
    branch_id: plan.branchId,
    session_id: plan.sessionId,
    leg_id: plan.legId,
    run_id: plan.runId,
    artifact_root: plan.run.artifactRoot,
    contract: plan.contract,
    started_at: plan.startedAt,
  };
  try {
    fs.writeFileSync(plan.run.branchPath(plan.branchId), `${JSON.stringify(snapshot, null, 2)}\n`, { mode: 0o600 });
  } catch {
    // The ledger is the record; the snapshot only helps a resume after a prune.
  }
}
