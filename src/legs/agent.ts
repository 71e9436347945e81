// `li agent` as a service: allocates the run, validates the contract against it, runs legs (auto-resume), returns the outcome.

import fs from "node:fs";
import type { Ledger } from "../ledger/ledger.ts";
import { ExitCode, UsageError, type LedgerUnavailableError } from "../util/errors.ts";
import { hostClock } from "../util/host-clock.ts";
import { randomId } from "../util/ids.ts";
import type { CompletionEvidence, EvidenceOptions } from "./evidence.ts";
import { runLeg, type LegHooks, type LegIo, type LegOptions } from "./leg.ts";
import type { LegNotifier } from "./notify.ts";
import { legExitCode } from "./outcome.ts";
import { processIdentity } from "../host/proc.ts";
import type { AgentRequest } from "./request.ts";
import type { ResumeHooks, ResumeTarget } from "./resume.ts";
import { allocateRun, takeRunId, type RunDir } from "./rundir.ts";
import type { AlsoInSetup, LegIds, LegPlan } from "./setup.ts";
import type { StreamLimits } from "./stream-copy.ts";
import { DEFAULT_KILL_GRACE_SECONDS, LiSignalTrap } from "./signals.ts";
import type { AfterCommit, LegOutage, TeardownResult } from "./teardown/state.ts";
import { mark } from "../util/profile.ts";

/** Exit codes that mean "the provider failed" for linked-session reconciliation (§8.2 step 5). */
export const PROVIDER_FAILURE_EXIT_CODES: readonly number[] = Object.freeze([75]);

export interface AgentDeps {
  ledger: Ledger | null;
  runsRoot: string;
  workdir: string;
  io: LegIo;
  /** The environment LI_RUN_ID is consumed from and the command inherits (process.env by default). */
  env: Record<string, string | undefined>;
  stdin: "inherit" | "ignore";
  now?: () => number;
  newId?: () => string;
  killGraceMs?: number;
  drainGraceMs?: number;
  heartbeatMs?: number;
  /** §20: how much of the disk a leg's stream copy may take. */
  streamLimits?: StreamLimits;
  /** §20: `$LI_HOME`, where this host's watcher takes legs on. */
  watcherHome?: string;
  checkEvidence?: (cwd: string, options: EvidenceOptions) => Promise<CompletionEvidence>;
  /** The notification work registers its callbacks here, inside the setup transaction. */
  alsoInSetup?: AlsoInSetup;
  /** Pushed after the final guarded write commits (step 10). */
  afterCommit?: readonly AfterCommit[];
  onStarted?: LegOptions["onStarted"];
  requirePersistence?: boolean;
  /** The leg's notice (§9): registration in setup, push after the final write, or one undurable run. */
  notifier?: LegNotifier;
  /** Test seams between the reads of a resume (§10). */
  resumeHooks?: ResumeHooks;
  /** Test seams between a leg's allocation, setup, spawn and markers. */
  legHooks?: LegHooks;
  /** Retry and spool when the ledger is unreachable (§17); the host id is the supervisor's. */
  outage?: Omit<LegOutage, "hostId">;
  /** The ledger could not even be opened, and stayed unreachable (§17): the first leg spools itself whole. */
  unreachable?: LedgerUnavailableError;
}

export interface AgentOutcome {
  plan: LegPlan;
  result: TeardownResult;
  /** li's own exit code (§8.1). */
  exit: number;
  legs: number;
}

/**
 * Whether a leg already has `runId`, as far as the ledger can say now. A ledger that cannot answer
 * (unreachable, or refusing: a wrong password) does not stop the leg here: its setup meets the same
 * failure and handles it as §16 and §17 say (a warning and the command runs, or the retry and the
 * spool; a detached leg's 78), and legs_run_id_idx still refuses a duplicate the setup would record.
 */
async function runIdTaken(ledger: Ledger, runId: string): Promise<boolean> {
  try {
    return await ledger.backend.runIdTaken(runId);
  } catch (error) {
    if (ledger.backend.ledgerError(error) === null) throw error;
    return false;
  }
}

/**
 * Claims the first leg's run directory: run id unique among legs and on disk, contract contained in the root.
 * A resumed leg passes the session's stored contract and artifact root (§7; `--save-dir` still wins).
 */
export async function allocateFirstRun(req: AgentRequest, deps: AgentDeps, inherited?: { contract: AgentRequest["contract"]; artifactRoot: string | null }): Promise<RunDir> {
  const runId = takeRunId(req.runId, deps.env);
  if (runId !== undefined && deps.ledger && (await runIdTaken(deps.ledger, runId))) {
    throw new UsageError(`run id ${runId} is already used by another leg`);
  }
  const saveDir = req.saveDir ?? inherited?.artifactRoot ?? undefined;
  const run = allocateRun({ runsRoot: deps.runsRoot, saveDir, runId, tolerateUnwritable: true, ...(deps.now ? { now: deps.now() } : {}) });
  const contract = inherited ? inherited.contract : req.contract;
  try {
    // The contract module loads only for a leg that has a contract (an absent one is always valid).
    if (contract !== null) (await import("../contracts/artifacts.ts")).validateContract(contract, run.artifactRoot);
  } catch (error) {
    fs.rmSync(run.stateRoot, { recursive: true, force: true });
    throw error;
  }
  return run;
}

export async function runAgent(req: AgentRequest, deps: AgentDeps): Promise<AgentOutcome> {
  // Trapped before anything is allocated or committed, for every leg of the run (§8.1): a signal
  // before a spawn ends that leg `cancelled`/`aborted` through its teardown instead of killing li.
  const signals = new LiSignalTrap();
  mark("signals trapped");
  try {
    return await runLegs(req, deps, signals);
  } finally {
    signals.release();
  }
}

async function runLegs(req: AgentRequest, deps: AgentDeps, signals: LiSignalTrap): Promise<AgentOutcome> {
  // The ledger's clock (on PostgreSQL the server's): started_at, heartbeats and ended_at are compared by other hosts' sweeps.
  const now = deps.now ?? deps.ledger?.now ?? hostClock;
  // §17: a new foreground leg waits for an unreachable ledger at most --ledger-retry, counted from its first
  // ledger call (this one), and a detached one not at all: its setup's attempts are cut to what is left.
  const setupBudgetMs = deps.outage && !deps.requirePersistence ? deps.outage.retrySeconds * 1000 : 0;
  const setupDeadlineMs = (deps.outage?.clockMs ?? (() => performance.now()))() + setupBudgetMs;
  // started_at is taken before the first query: on PostgreSQL the clock must be the server's by then. A
  // ledger that cannot be reached fails the setup below, as it would without this (§8.4).
  // A refusal (a wrong password) is an answer too: the setup meets it again and reports it (§16).
  const ledger = deps.ledger;
  const answered = ledger ? await ledger.ready().then(() => true, (error: unknown) => ledger.backend.ledgerError(error)?.unreachable !== true) : true;
  const newId = deps.newId ?? randomId;
  const resume: ResumeTarget | null = req.resume !== null ? await (await import("./resume.ts")).resolveResume(deps.ledger, deps.runsRoot, req.resume, deps.resumeHooks) : null;
  mark("ledger ready");
  let run = await allocateFirstRun(req, deps, resume ? { contract: resume.contract, artifactRoot: resume.artifactRoot } : undefined);
  mark("run directory allocated");
  if (resume && resume.sessionId === null) deps.io.log(`resume: branch ${resume.branchId} has no session any more; it continues under a new session`);
  let sessionId = resume?.sessionId ?? newId();
  const branchId = resume?.branchId ?? newId();
  const contract = resume ? resume.contract : req.contract;
  const cwd = req.cwd ?? deps.workdir;
  const evidenceCwd = req.evidenceGate === false ? null : req.cwd !== null || req.evidenceGate === true ? cwd : null;
  const supervisor = processIdentity();
  const alsoInSetup = composeSetup(deps, now);
  let legs = 0;
  let previousLegId: string | null = null;
  for (;;) {
    legs++;
    const first = legs === 1;
    const argv = first ? req.argv : (req.resumeArgv ?? req.argv);
    const plan: LegPlan = {
      sessionId,
      branchId,
      legId: newId(),
      runId: run.runId,
      run,
      argv,
      cwd,
      startedAt: now(),
      supervisor,
      contract,
      invocationId: req.invocationId,
      linkedSessionId: req.linkedSessionId,
      previousLegId,
    };
    const mode = !first ? "continue" : resume?.sessionId ? "resume" : "new";
    const outcome = await runLeg(plan, mode, {
      ledger: deps.ledger,
      io: deps.io,
      env: deps.env,
      ...(req.passEnv ? { passEnv: req.passEnv } : {}),
      stdin: deps.stdin,
      timeout: req.timeout,
      mayDefer: legs <= req.autoResume,
      evidenceCwd,
      baseRef: req.baseRef,
      linkedSessionId: req.linkedSessionId,
      providerExitCodes: PROVIDER_FAILURE_EXIT_CODES,
      now,
      newId,
      checkEvidence: deps.checkEvidence ?? checkCompletionEvidenceLazily,
      afterCommit: [...(deps.afterCommit ?? []), ...(deps.notifier ? [deps.notifier.afterCommit(plan, deps.ledger)] : [])],
      killGraceMs: deps.killGraceMs ?? (req.killGrace ?? DEFAULT_KILL_GRACE_SECONDS) * 1000,
      stopLeftovers: req.stopLeftovers === true,
      ...(deps.drainGraceMs !== undefined ? { drainGraceMs: deps.drainGraceMs } : {}),
      ...(deps.heartbeatMs !== undefined ? { heartbeatMs: deps.heartbeatMs } : {}),
      ...(deps.streamLimits ? { streamLimits: deps.streamLimits } : {}),
      ...(deps.watcherHome ? { watcherHome: deps.watcherHome } : {}),
      ...(alsoInSetup ? { alsoInSetup } : {}),
      ...(first && deps.onStarted ? { onStarted: deps.onStarted } : {}),
      ...(deps.requirePersistence ? { requirePersistence: true } : {}),
      ...(deps.legHooks ? { hooks: deps.legHooks } : {}),
      ...(deps.outage ? { outage: { ...deps.outage, hostId: supervisor.hostId } } : {}),
      ...(deps.notifier ? { spoolRegistration: (ids: LegIds) => deps.notifier!.spooledRegistration(ids) } : {}),
      ...(first && deps.unreachable ? { unreachable: deps.unreachable } : {}),
      ...(first ? { setupDeadline: { atMs: setupDeadlineMs, answered } } : {}),
      signals,
    });
    if (outcome.result.persisted !== "deferred") {
      // An outcome the ledger could not take is a failure to write the ledger (78, §18), whatever it was.
      const exit = outcome.result.persisted === "unrecorded" ? ExitCode.unavailable : legExitCode(outcome.termination, outcome.result.status, outcome.result.exitCode);
      return { plan, result: outcome.result, exit, legs };
    }
    // A resume may have started a new session (its old one was removed): the next leg continues that one.
    sessionId = plan.sessionId;
    previousLegId = plan.legId;
    // The next leg continues the same branch and session in a new run directory, with the session's artifact root.
    run = allocateRun({ runsRoot: deps.runsRoot, saveDir: run.artifactRoot, now: now(), tolerateUnwritable: true });
  }
}

/** The caller's extra setup writes, then the leg's registration (§9.1), in the same transaction. */
function composeSetup(deps: AgentDeps, now: () => number): AlsoInSetup | undefined {
  const notifier = deps.notifier;
  const extra = deps.alsoInSetup;
  if (!notifier) return extra;
  return async (tx, ids) => {
    await extra?.(tx, ids);
    await notifier.register(tx, ids, now());
  };
}

/** The evidence gate's git probe, loaded only by a leg whose teardown runs the gate. */
async function checkCompletionEvidenceLazily(cwd: string, options: EvidenceOptions): Promise<CompletionEvidence> {
  return (await import("./evidence.ts")).checkCompletionEvidence(cwd, options);
}
