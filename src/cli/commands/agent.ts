// `li agent [options] -- <command…>`: runs a command as a tracked leg (SPEC §8) and exits by its outcome.
import fs from "node:fs";
import path from "node:path";
import { command } from "../command.ts";
import { ExitCode, LedgerUnavailableError, UnknownIdError, UsageError } from "../../util/errors.ts";
import type { Ledger } from "../../ledger/ledger.ts";
import { NO_PATIENCE, type Patience } from "../../ledger/patience.ts";
import { runAgent, type AgentDeps, type AgentOutcome } from "../../legs/agent.ts";
import { SUPERVISOR_ENV } from "../../legs/env.ts";
import { PersistenceSetupError, type LegIo } from "../../legs/leg.ts";
import type { LegOutage } from "../../legs/teardown/state.ts";
import { LegNotifier } from "../../legs/notify.ts";
import { EXIT_CODE_BY_STATUS } from "../../legs/outcome.ts";
import { parseAgentRequest, type AgentArgs, type AgentRequest } from "../../legs/request.ts";
import { heartbeatMsFromEnv } from "../../legs/heartbeat.ts";
import { hostOverrides } from "../../host/proc.ts";
import { retryUnreachable, type Attempt } from "../../legs/ledger-retry.ts";
import { DEFAULT_LEDGER_RETRY_SECONDS } from "../../settings/defaults.ts";
import { formatDuration } from "../../util/duration.ts";
import { spoolDirOf } from "../../spool/entry.ts";
import { stdinMode } from "../../legs/spawn.ts";
import { findBranchSnapshot } from "../../legs/rundir.ts";
import { anySettingsFile } from "../../settings/lookup.ts";
import type { Settings } from "../../settings/settings.ts";
import { cliPaths } from "../paths.ts";
import { cliContext } from "../globals.ts";
import { isTerminal, writeAll } from "../fd.ts";
import { writeErr, writeOut, writeNote } from "../io.ts";
import { repeatedFlag } from "../repeated-flag.ts";
import type { LegRunner, QueueArgs } from "../agent-queue.ts";
import type { ScheduledLegHooks } from "../../schedule/leg.ts";
import { mark } from "../../util/profile.ts";

/** "0 completed, 1 completed_empty/failed, …" from the status table; `running` is no outcome of its own. */
function exitCodesByStatus(): string {
  const byCode = new Map<number, string[]>();
  for (const [status, code] of Object.entries(EXIT_CODE_BY_STATUS)) if (status !== "running") byCode.set(code, [...(byCode.get(code) ?? []), status]);
  return [...byCode].map(([code, statuses]) => `${code} ${statuses.join("/")}`).join(", ");
}

const writeFd = (fd: number) => (chunk: Uint8Array) => writeAll(fd, chunk);
const note = (line: string) => writeNote(line);

/**
 * `-r` on a machine with no ledger yet: the branch can only be in a run directory's snapshot. An unknown
 * one is a usage error, and must be refused before opening the ledger would create it (§16).
 */
async function refuseUnknownBranchBeforeCreating(resume: string | null): Promise<void> {
  if (resume === null) return;
  // Loaded for a resume only: it brings the read-side opener, which a new leg never needs.
  const { ledgerExists } = await import("../../ledger/exists.ts");
  const paths = cliPaths();
  if (await ledgerExists(paths)) return;
  if (!findBranchSnapshot(paths.runsRoot, resume)) throw new UnknownIdError(resume, "-r");
}

export default command({
  description:
      `Run a command as a tracked leg: li agent [options] -- <command…>. Exit ${exitCodesByStatus()}, ${ExitCode.unavailable} cannot start or the outcome could not be recorded, ${ExitCode.usage} usage. When li's stdin is a terminal the command reads /dev/null.`,
  examples: ["li agent --timeout=30m --artifact=report=out/report.json -- make test", "li agent -r SESSION_ID -- make test"],
  // Opened by the leg only when it persists: a foreground leg still runs when the ledger cannot be opened (§8.4).
  ledger: "create",
  takesCommand: true,
  args: {
    resume: { type: "string", alias: "r", valueHint: "ID", complete: "sessions", description: "resume a branch: a new leg on it; a session id (what --detach prints) names its current branch" },
    notify: { type: "string", valueHint: "TEMPLATE", description: "an argv template run once when the leg's session ends" },
    timeout: { type: "string", valueHint: "DURATION", description: "after this long every process of the leg gets SIGTERM, and SIGKILL after --kill-grace (default 5 s) if still running (recorded timed_out, exit 124)" },
    "ledger-retry": { type: "string", valueHint: "DURATION", description: "how long to retry an unreachable ledger before spooling the outcome under $LI_HOME/spool (default 2m)" },
    "kill-grace": { type: "string", valueHint: "DURATION", description: "how long a stopped leg's processes get between SIGTERM and SIGKILL (default 5s; setting agent.kill_grace)" },
    "stop-leftovers": { type: "boolean", description: "after a normal end, stop what the command left running in the leg (setting agent.stop_leftovers)" },
    artifact: { type: "string", valueHint: "ID=PATH[?]", complete: "files", description: "an expected artifact under the artifact root (? = optional); repeatable" },
    profile: { type: "string", valueHint: "NAME", description: "artifacts from .li/profiles/NAME.yaml" },
    playbook: { type: "string", valueHint: "FILE", complete: "files", description: "artifacts from a playbook file" },
    "save-dir": { type: "string", valueHint: "DIR", complete: "dirs", description: "the directory to use as the artifact root" },
    "run-id": { type: "string", valueHint: "RUN_ID", description: "the run id (default LI_RUN_ID, else a timestamp and hex)" },
    cwd: { type: "string", valueHint: "DIR", complete: "dirs", description: "the command's working directory (also turns on the completion-evidence gate)" },
    "base-ref": { type: "string", valueHint: "REF", description: "the git base for completion evidence" },
    invocation: { type: "string", valueHint: "ID", description: "the invocation this leg belongs to" },
    "linked-session": { type: "string", valueHint: "SESSION_ID", description: "a session whose outcome stands in for a provider failure (exit 75)" },
    "auto-resume": { type: "string", valueHint: "N", description: "continue a timed-out leg up to N times" },
    "resume-command": { type: "string", valueHint: "ARGV", description: "the command line for the continuing legs (default: the same command)" },
    "pass-env": { type: "string", valueHint: "NAME", description: "let the command keep this credential li consumed (LI_DB, PGPASSWORD), stripped otherwise; with --queue, any variable the queued leg should keep beyond PATH, HOME, LANG, LC_*…; repeatable" },
    "evidence-gate": { type: "boolean", description: "check completion evidence (--no-evidence-gate: never)" },
    detach: { type: "boolean", description: "run in the background; print the session id once it is recorded" },
    persist: { type: "boolean", default: true, description: "run without a ledger: nothing is recorded" },
    json: { type: "boolean", description: "print one JSON record on stdout (the command's stdout goes to stderr)" },
    queue: { type: "string", valueHint: "NAME", description: "submit as a scheduled run of this queue: with --detach print its id at once, else wait for its turn and run here" },
    after: { type: "string", valueHint: "ID", description: "with --queue: start only after this run, session or leg succeeded (skipped if it did not); repeatable" },
    needs: { type: "string", valueHint: "LABEL", description: "with --queue: only a host whose watch.labels has this label runs it; repeatable" },
    retries: { type: "string", valueHint: "N", description: "with --queue: retry a failed or timed-out attempt up to N times, each a new run chained to the last" },
    "retry-delay": { type: "string", valueHint: "DURATION", description: "with --queue: the wait before a retry (default 0)" },
    "retry-backoff": { type: "string", valueHint: "fixed|exp", description: "with --queue: the same delay each time (fixed, default) or doubling (exp)" },
    "retry-jitter": { type: "boolean", description: "with --queue: a random delay in the upper half of each retry's delay" },
    lease: { type: "string", valueHint: "DURATION", description: "with --queue: how long a lease lasts without the leg's heartbeat renewing it (default 60s)" },
    "schedule-run": { type: "string", valueHint: "RUN_ID", description: "li's own: the leg of a leased run (li watch starts it)" },
  },
  async run({ args: parsed, rawArgs, passthrough, ledger: open }) {
    // citty keeps only the last of a repeated string flag: --artifact is collected from the raw words.
    const args = agentArgs(parsed as Record<string, unknown>, rawArgs);
    const readyValue = process.env[SUPERVISOR_ENV];
    delete process.env[SUPERVISOR_ENV];
    const scheduleRun = typeof parsed["schedule-run"] === "string" ? (parsed["schedule-run"] as string) : undefined;
    // Checked before anything else: the variable can only name the socket li's own parent handed over.
    if (readyValue) return supervise(args, passthrough, readyValue, open, scheduleRun);
    if (scheduleRun !== undefined) throw new UsageError("--schedule-run is li's own: li watch starts a leased run's leg with it");
    const queueArgs = queueFlags(parsed as Record<string, unknown>, rawArgs);
    if (queueArgs.queue !== undefined) {
      hostOverrides();
      const workdir = process.cwd();
      const settings = await agentSettings(args, workdir, note);
      const { submitQueued } = await import("../agent-queue.ts");
      // Waiting for its turn in the foreground holds the ledger for as long as the queue takes: outside the
      // host's connection slots (§20), as li wait is, so waiting runs never starve the host's legs.
      if (!args.detach) {
        (await import("../../ledger/early-open.ts")).closeUnusedEarly();
        (await import("../../ledger/slot-use.ts")).holdLedgerLong();
      }
      return submitQueued(args, queueArgs, passthrough, { open, settings, workdir, runner: foregroundRunner(args, settings, workdir) });
    }
    refuseQueueFlagsWithoutQueue(queueArgs);
    // LI_HOST_ID / LI_HOST_NAME name this host in the leg's row: a bad value (or a bad test setting) is refused before anything is allocated or recorded.
    hostOverrides();
    heartbeatMsFromEnv(process.env);
    const workdir = process.cwd();
    const settings = await agentSettings(args, workdir, note);
    mark("settings lookup");
    const req = await parseAgentRequest(args, passthrough, { workdir, defaultTimeout: settings?.agentTimeout ?? null, ...(settings ? { defaultLedgerRetry: settings.agentLedgerRetry, defaultKillGrace: settings.agentKillGrace, defaultStopLeftovers: settings.agentStopLeftovers } : {}), env: process.env });
    mark("request parsed");
    req.contractWarnings.forEach(note);
    if (req.detach) {
      // The supervisor's warnings go to its log: a bad --notify is worth saying here, where someone reads it.
      if (req.notify !== null) (await LegNotifier.load({ notifyFlag: req.notify, settings: null, log: note })).resolve({ sessionId: "", branchId: "" });
      // The detaching parent never uses the ledger: its early connection (and its slot of the host's, §20)
      // is given back now, as the supervisor it waits for needs one.
      (await import("../../ledger/early-open.ts")).closeUnusedEarly();
      const report = await (await import("../../legs/detach.ts")).startDetached(process.argv.slice(2), process.env);
      if (!report.ok) {
        note(report.message);
        return report.exit;
      }
      if (req.json) (await import("../output.ts")).writeJson({ session_id: report.session_id, branch_id: report.branch_id, run_id: report.run_id });
      else writeOut(`${report.session_id}\n`);
      return 0;
    }
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
      (await import("../output.ts")).writeJson({
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
  },
});

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

/**
 * The settings (§15), resolved once per process from `--cwd` (else the working directory); null when
 * no settings file exists, so a leg without one never loads the settings module.
 */
async function agentSettings(args: AgentArgs, workdir: string, warn: (line: string) => void): Promise<Settings | null> {
  const start = typeof args.cwd === "string" ? path.resolve(workdir, args.cwd) : workdir;
  // LI_HOME as the ledger reads it (`~` expanded, empty = unset), so settings and ledger agree on it.
  const liHome = cliPaths().home;
  if (!anySettingsFile(start, liHome)) return null;
  const { loadSettings } = await import("../../settings/settings.ts");
  const { settings, warnings } = loadSettings({ cwd: start, liHome });
  warnings.forEach(warn);
  return settings;
}

function notifier(flag: string | null, settings: Settings | null, log: (line: string) => void): Promise<LegNotifier> {
  return LegNotifier.load({ notifyFlag: flag, settings, log, liHome: cliPaths().home });
}

/** The flags as the service names them; citty keeps only the last of a repeated --artifact, so those come from the raw words. */
function agentArgs(parsed: Record<string, unknown>, rawArgs: readonly string[]): AgentArgs {
  const str = (key: string) => (typeof parsed[key] === "string" ? (parsed[key] as string) : undefined);
  const bool = (key: string) => (typeof parsed[key] === "boolean" ? (parsed[key] as boolean) : undefined);
  return {
    resume: str("resume"),
    notify: str("notify"),
    timeout: str("timeout"),
    ledgerRetry: str("ledger-retry"),
    killGrace: str("kill-grace"),
    stopLeftovers: bool("stop-leftovers"),
    artifact: repeatedFlag(rawArgs, "artifact"),
    profile: str("profile"),
    playbook: str("playbook"),
    saveDir: str("save-dir"),
    runId: str("run-id"),
    cwd: str("cwd"),
    baseRef: str("base-ref"),
    invocation: str("invocation"),
    linkedSession: str("linked-session"),
    autoResume: str("auto-resume"),
    resumeCommand: str("resume-command"),
    passEnv: repeatedFlag(rawArgs, "pass-env"),
    evidenceGate: bool("evidence-gate"),
    detach: bool("detach"),
    persist: bool("persist"),
    json: bool("json"),
  };
}

/** The spool's writer, handed down to the leg: loaded only when the ledger stayed unreachable past --ledger-retry. */
const spoolOutcome: LegOutage["spool"] = async (outage, request) => (await import("../../spool/write.ts")).spoolFinal(outage, request);

/** The spool's room for one entry, taken by every recorded leg after its setup (§20). */
const reserveRoom: NonNullable<LegOutage["reserve"]> = async (outage, owner, nowSeconds) => (await import("../../spool/reserve.ts")).reserveEntry(outage.spoolDir, owner, nowSeconds);

function deps(ledger: Ledger | null, io: LegIo, workdir: string, stdin: "inherit" | "ignore", req: AgentRequest, settings: Settings | null): AgentDeps {
  const heartbeatMs = heartbeatMsFromEnv(process.env);
  const outage = { retrySeconds: req.ledgerRetry ?? DEFAULT_LEDGER_RETRY_SECONDS, spoolDir: spoolDirOf(cliPaths().home), spool: spoolOutcome, reserve: reserveRoom };
  const streamLimits = { reserve: settings?.agentStreamReserve ?? null, maxBytes: settings?.agentStreamMax ?? null };
  return { ledger, runsRoot: cliPaths().runsRoot, workdir, io, env: process.env, stdin, outage, streamLimits, watcherHome: cliPaths().home, ...(heartbeatMs !== undefined ? { heartbeatMs } : {}) };
}

/** Queue flags given without --queue are a mistake worth one line, not silently nothing. */
function refuseQueueFlagsWithoutQueue(q: QueueArgs): void {
  if (q.queue !== undefined) return;
  const given = [
    q.after.length > 0 && "--after",
    q.needs.length > 0 && "--needs",
    q.retries !== undefined && "--retries",
    q.retryDelay !== undefined && "--retry-delay",
    q.retryBackoff !== undefined && "--retry-backoff",
    q.retryJitter !== undefined && "--retry-jitter",
    q.lease !== undefined && "--lease",
  ].filter(Boolean);
  if (given.length > 0) throw new UsageError(`${given[0]} needs --queue NAME (it describes a scheduled run)`);
}

/** The queue flags (repeatable ones from the raw words, as citty keeps only the last). */
function queueFlags(parsed: Record<string, unknown>, rawArgs: readonly string[]): QueueArgs {
  const str = (key: string) => (typeof parsed[key] === "string" ? (parsed[key] as string) : undefined);
  return {
    queue: str("queue"),
    after: repeatedFlag(rawArgs, "after").flatMap((v) => v.split(",")).map((v) => v.trim()).filter((v) => v !== ""),
    needs: repeatedFlag(rawArgs, "needs"),
    passEnv: repeatedFlag(rawArgs, "pass-env"),
    retries: str("retries"),
    retryDelay: str("retry-delay"),
    retryBackoff: str("retry-backoff"),
    retryJitter: typeof parsed["retry-jitter"] === "boolean" ? (parsed["retry-jitter"] as boolean) : undefined,
    lease: str("lease"),
  };
}

/** How a foreground queued run's leg runs here: the ordinary foreground leg, bound to its run, persistence required. */
function foregroundRunner(args: AgentArgs, settings: Settings | null, workdir: string): LegRunner {
  return {
    json: args.json === true,
    note,
    run: async (req, hooks, ledger) => {
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
      if (req.json) (await import("../output.ts")).writeJson({ session_id: outcome.plan.sessionId, run_id: outcome.plan.runId, status: outcome.result.status, reason_code: outcome.result.reasonCode, exit_code: outcome.result.exitCode });
      return outcome.exit;
    },
  };
}

/** The supervising li of a detached leg: commits setup, reports through the ready file, then runs the leg. */
async function supervise(argsGiven: AgentArgs, passthroughGiven: string[] | null, readyValue: string, open: (patience: Patience) => Ledger, scheduleRun?: string): Promise<number> {
  // Loaded here, as the detaching parent loads it: a foreground leg never needs it.
  const { openReadyChannel, writeReady } = await import("../../legs/detach.ts");
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
      const leased = await (await import("../agent-queue.ts")).leasedRunRequest(ledger, scheduleRun, log);
      args = leased.args;
      passthrough = leased.passthrough;
      scheduled = leased.hooks;
    }
    const settings = await agentSettings(args, workdir, log);
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
    const { exit, message } = (await import("../exit.ts")).exitFor(error);
    return fail(exit, message);
  }
}
