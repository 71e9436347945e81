// The leg side of `li agent` (SPEC §8): a foreground leg, the supervisor of a detached leg, and the leg of a
// foreground queued run when its turn came. commands/agent.ts loads it with import() on those paths only:
// `li agent --queue Q --detach`, which validates and records a scheduled run, and the detaching parent of
// `li agent --detach`, which starts the supervisor, load none of the leg machinery (test/meta/startup-graph.test.ts).
import fs from "node:fs";
import path from "node:path";
import { ExitCode, LedgerUnavailableError, UnknownIdError } from "../util/errors.ts";
import type { Ledger } from "../ledger/ledger.ts";
import { NO_PATIENCE, type Patience } from "../ledger/patience.ts";
import { runAgent, type AgentDeps, type AgentOutcome } from "../legs/agent.ts";
import { PersistenceSetupError, type LegIo } from "../legs/leg.ts";
import type { LegOutage } from "../legs/teardown/state.ts";
import { LegNotifier } from "../legs/notify.ts";
import { parseAgentRequest, type AgentArgs, type AgentRequest } from "../legs/request.ts";
import { heartbeatMsFromEnv } from "../legs/heartbeat.ts";
import { retryUnreachable, type Attempt } from "../legs/ledger-retry.ts";
import { DEFAULT_LEDGER_RETRY_SECONDS } from "../settings/defaults.ts";
import { formatDuration } from "../util/duration.ts";
import { spoolDirOf } from "../spool/entry.ts";
import { stdinMode } from "../legs/spawn.ts";
import { findBranchSnapshot } from "../legs/rundir.ts";
import type { Settings } from "../settings/settings.ts";
import type { ScheduledLegHooks } from "../schedule/leg.ts";
import { cliPaths } from "./paths.ts";
import { cliContext } from "./globals.ts";
import { isTerminal, writeAll } from "./fd.ts";
import { writeNote } from "./io.ts";
import { mark } from "../util/profile.ts";

/** How the settings are resolved for a request (commands/agent.ts's, from --cwd or the working directory). */
export type SettingsOf = (args: AgentArgs, workdir: string, warn: (line: string) => void) => Promise<Settings | null>;

const writeFd = (fd: number) => (chunk: Uint8Array) => writeAll(fd, chunk);
const note = (line: string) => writeNote(line);

/**
 * `-r` on a machine with no ledger yet: the branch can only be in a run directory's snapshot. An unknown
 * one is a usage error, and must be refused before opening the ledger would create it (§16).
 */
async function refuseUnknownBranchBeforeCreating(resume: string | null): Promise<void> {
  if (resume === null) return;
  // Loaded for a resume only: it brings the read-side opener, which a new leg never needs.
  const { ledgerExists } = await import("../ledger/exists.ts");
  const paths = cliPaths();
  if (await ledgerExists(paths)) return;
  if (!findBranchSnapshot(paths.runsRoot, resume)) throw new UnknownIdError(resume, "-r");
}

/** A foreground leg that is not queued, its request parsed: exits by its outcome. */
export async function runLeg(req: AgentRequest, open: (patience: Patience) => Ledger, settings: Settings | null, workdir: string): Promise<number> {
  // The entry point closes the ledger when the command ends.
  let ledger: Ledger | null = null;
  let unreachable: LedgerUnavailableError | null = null;
  if (req.persist) {
    await refuseUnknownBranchBeforeCreating(req.resume);
    const opened = await openOrWait(open, req);
    ledger = opened.ledger;
    unreachable = opened.unreachable;
    mark("ledger opened");
  } else note("warning: --no-persist: nothing is recorded in the ledger");
  const io: LegIo = { stdout: writeFd(req.json ? 2 : 1), stderr: writeFd(2), log: note };
  const legNotifier = await notifier(req.notify, settings, note);
  mark("notifier loaded");
  const outcome = await runAgent(req, {
    ...deps(ledger, io, workdir, stdinMode(isTerminal(0), false), req, settings),
    notifier: legNotifier,
    ...(unreachable ? { unreachable } : {}),
  });
  const { plan, result } = outcome;
  if (result.ledgerError) cliContext.ledgerFailed = true;
  note(summaryLine(outcome));
  if (req.json) {
    (await import("./output.ts")).writeJson({
      session_id: plan.sessionId,
      branch_id: plan.branchId,
      run_id: plan.runId,
      leg_id: plan.legId,
      status: result.status,
      reason_code: result.reasonCode,
      exit_code: result.exitCode,
      persisted: result.persisted !== "none" && result.persisted !== "unrecorded",
      ...(result.ledgerError ? { ledger_error: result.ledgerError.message } : {}),
      ...(result.spoolFile ? { spooled: result.spoolFile } : {}),
      legs: outcome.legs,
    });
  }
  return outcome.exit;
}

/**
 * Opens the ledger for a foreground leg. Best-effort (§8.4): a refusal warns and the command runs
 * unrecorded. An unreachable ledger (§17) is waited for up to --ledger-retry (a new leg only; a resume
 * needs its session's rows); still unreachable, the leg runs and spools itself whole.
 */
async function openOrWait(open: (patience: Patience) => Ledger, req: AgentRequest): Promise<{ ledger: Ledger | null; unreachable: LedgerUnavailableError | null }> {
  const attempt = (): Attempt<Ledger> => {
    try {
      // One attempt each: this loop (and the leg's setup, leg.ts) is the waiting, bounded by --ledger-retry.
      return { ok: true, value: open(NO_PATIENCE) };
    } catch (error) {
      return { ok: false, retry: error instanceof LedgerUnavailableError && error.unreachable && req.resume === null, error };
    }
  };
  const first = attempt();
  if (first.ok) return { ledger: first.value, unreachable: null };
  if (first.retry && first.error instanceof LedgerUnavailableError && first.error.diskFull) {
    // §20: a full disk is no outage a retry rides out; the command runs now.
    note(`warning: ${first.error.message}; a full disk is not waited for: the command runs now, and its whole leg is spooled for li watch to record`);
    return { ledger: null, unreachable: first.error };
  }
  const seconds = req.ledgerRetry ?? DEFAULT_LEDGER_RETRY_SECONDS;
  let last: Attempt<Ledger> = first;
  if (first.retry) {
    if (seconds > 0) note(`the ledger is unreachable (${(first.error as Error).message}); waiting up to ${formatDuration(seconds)} before the command runs`);
    last = await retryUnreachable(async () => attempt(), { seconds });
    if (last.ok) return { ledger: last.value, unreachable: null };
  }
  const error = last.error;
  if (last.retry && error instanceof LedgerUnavailableError) {
    note(`the ledger is still unreachable (${error.message}); the command runs, and its whole leg is spooled for li watch to record`);
    return { ledger: null, unreachable: error };
  }
  note(`warning: ${error instanceof Error ? error.message : String(error)}; the command runs unrecorded`);
  return { ledger: null, unreachable: null };
}

/**
 * The leg's last line. An outcome the ledger could not take says so plainly, with the ledger and the
 * reason, and nothing in it reads as if it were recorded.
 */
function summaryLine({ plan, result }: AgentOutcome): string {
  const outcome = `${result.status} (${result.reasonCode || "-"}) session ${plan.sessionId} branch ${plan.branchId}`;
  if (result.spoolFile && result.ledgerError) {
    // Exit by the outcome as usual (§17): the record is safe on this host and replayed when the ledger is back.
    return `the outcome is spooled in ${result.spoolFile} (${result.ledgerError.message}); li watch, or any li command that writes, records it once the ledger is back; it was ${outcome}`;
  }
  if (result.ledgerError) {
    // li exits 78 here, so the command's own exit code is said too.
    const code = result.exitCode === null ? "the command did not run" : `command exit ${result.exitCode}`;
    return `the outcome was NOT recorded: ${result.ledgerError.message}; it was ${outcome} (${code}), which the ledger still shows running`;
  }
  return `${outcome}${result.persisted === "none" ? " (not recorded)" : ""}${whyEmpty(plan, result)}`;
}

/** A quiet success the evidence gate demoted (§8.3, the seed's D4) says why, and how to accept one. */
function whyEmpty(plan: AgentOutcome["plan"], result: AgentOutcome["result"]): string {
  if (result.reasonCode !== "run.completed_empty.no_evidence") return "";
  return `: no output, no artifact and no change in ${plan.cwd}; --no-evidence-gate accepts a quiet success`;
}

/** The spool's writer, handed down to the leg: loaded only when the ledger stayed unreachable past --ledger-retry. */
const spoolOutcome: LegOutage["spool"] = async (outage, request) => (await import("../spool/write.ts")).spoolFinal(outage, request);

/** The spool's room for one entry, taken by every recorded leg after its setup (§20). */
const reserveRoom: NonNullable<LegOutage["reserve"]> = async (outage, owner, nowSeconds) => (await import("../spool/reserve.ts")).reserveEntry(outage.spoolDir, owner, nowSeconds);

function deps(ledger: Ledger | null, io: LegIo, workdir: string, stdin: "inherit" | "ignore", req: AgentRequest, settings: Settings | null): AgentDeps {
  const heartbeatMs = heartbeatMsFromEnv(process.env);
  const outage = { retrySeconds: req.ledgerRetry ?? DEFAULT_LEDGER_RETRY_SECONDS, spoolDir: spoolDirOf(cliPaths().home), spool: spoolOutcome, reserve: reserveRoom };
  const streamLimits = { reserve: settings?.agentStreamReserve ?? null, maxBytes: settings?.agentStreamMax ?? null };
  return { ledger, runsRoot: cliPaths().runsRoot, workdir, io, env: process.env, stdin, outage, streamLimits, watcherHome: cliPaths().home, ...(heartbeatMs !== undefined ? { heartbeatMs } : {}) };
}

function notifier(flag: string | null, settings: Settings | null, log: (line: string) => void): Promise<LegNotifier> {
  return LegNotifier.load({ notifyFlag: flag, settings, log, liHome: cliPaths().home });
}

/** A foreground queued run's leg, when its turn came: the ordinary foreground leg, bound to its run, persistence required. */
export async function runQueuedLeg(req: AgentRequest, hooks: ScheduledLegHooks, ledger: Ledger, settings: Settings | null, workdir: string): Promise<number> {
  const io: LegIo = { stdout: writeFd(req.json ? 2 : 1), stderr: writeFd(2), log: note };
  const outcome = await runAgent(req, {
    ...deps(null, io, workdir, stdinMode(isTerminal(0), false), req, settings),
    ledger,
    notifier: await notifier(req.notify, settings, note),
    requirePersistence: true,
    alsoInSetup: hooks.alsoInSetup,
    afterCommit: [hooks.afterCommit],
  });
  note(summaryLine(outcome));
  if (req.json) (await import("./output.ts")).writeJson({ session_id: outcome.plan.sessionId, run_id: outcome.plan.runId, status: outcome.result.status, reason_code: outcome.result.reasonCode, exit_code: outcome.result.exitCode });
  return outcome.exit;
}

/** The supervising li of a detached leg: commits setup, reports through the ready file, then runs the leg. */
export async function supervise(argsGiven: AgentArgs, passthroughGiven: string[] | null, readyValue: string, open: (patience: Patience) => Ledger, settingsOf: SettingsOf, scheduleRun?: string): Promise<number> {
  // Loaded here, as the detaching parent loads it: a foreground leg never needs it.
  const { openReadyChannel, writeReady } = await import("../legs/detach.ts");
  const ready = openReadyChannel(readyValue);
  let logFile: string | null = null;
  const log = (line: string) => {
    try {
      // Owner-only whatever the umask (§18), as every file li creates.
      if (logFile) fs.appendFileSync(logFile, `li: ${line}\n`, { mode: 0o600 });
    } catch {
      // A full disk or a removed run directory: the ledger still holds the outcome.
    }
  };
  let reported = false;
  const fail = (exit: number, message: string) => {
    if (!reported) writeReady(ready, { ok: false, exit, message });
    reported = true;
    log(message);
    return exit;
  };
  let ledger: Ledger | null = null;
  try {
    const workdir = process.cwd();
    let args = argsGiven;
    let passthrough = passthroughGiven;
    let scheduled: ScheduledLegHooks | null = null;
    if (scheduleRun !== undefined) {
      // A leased run's leg (li watch started it): the whole request is the ledger's, read before anything else.
      try {
        ledger = open(NO_PATIENCE);
      } catch (error) {
        return fail(ExitCode.unavailable, `cannot record a detached leg: ${error instanceof Error ? error.message : String(error)}`);
      }
      const leased = await (await import("./agent-queue.ts")).leasedRunRequest(ledger, scheduleRun, log);
      args = leased.args;
      passthrough = leased.passthrough;
      scheduled = leased.hooks;
    }
    const settings = await settingsOf(args, workdir, log);
    const req = await parseAgentRequest(args, passthrough, { workdir, defaultTimeout: settings?.agentTimeout ?? null, ...(settings ? { defaultLedgerRetry: settings.agentLedgerRetry, defaultKillGrace: settings.agentKillGrace, defaultStopLeftovers: settings.agentStopLeftovers } : {}), env: process.env });
    try {
      ledger ??= open(NO_PATIENCE);
    } catch (error) {
      return fail(ExitCode.unavailable, `cannot record a detached leg: ${error instanceof Error ? error.message : String(error)}`);
    }
    const io: LegIo = { stdout: () => {}, stderr: () => {}, log };
    const outcome = await runAgent(req, {
      ...deps(ledger, io, workdir, "ignore", req, settings),
      notifier: await notifier(req.notify, settings, log),
      requirePersistence: true,
      ...(scheduled ? { alsoInSetup: scheduled.alsoInSetup, afterCommit: [scheduled.afterCommit] } : {}),
      onStarted: (plan) => {
        logFile = path.join(plan.run.streamDir, "li.log");
        writeReady(ready, { ok: true, session_id: plan.sessionId, branch_id: plan.branchId, run_id: plan.runId });
        reported = true;
      },
    });
    log(summaryLine(outcome));
    return outcome.exit;
  } catch (error) {
    if (error instanceof PersistenceSetupError) return fail(ExitCode.unavailable, error.message);
    const { exit, message } = (await import("./exit.ts")).exitFor(error);
    return fail(exit, message);
  }
}
