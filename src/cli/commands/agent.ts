// `li agent [options] -- <command…>`: runs a command as a tracked leg (SPEC §8) and exits by its outcome.
// This module reads the flags, the settings and the request, and starts a detached leg's supervisor; the leg
// itself (cli/agent-leg.ts) and a scheduled run's submit (cli/agent-queue.ts) load with import() on their own
// paths, so neither `li agent --queue Q --detach` nor `li agent --detach`'s parent loads the leg machinery
// (test/meta/startup-graph.test.ts).
import path from "node:path";
import { command } from "../command.ts";
import { ExitCode, UsageError } from "../../util/errors.ts";
import { EXIT_CODE_BY_STATUS } from "../../legs/outcome.ts";
import { parseAgentRequest, type AgentArgs, type AgentRequest } from "../../legs/request.ts";
import { heartbeatMsFromEnv } from "../../legs/heartbeat.ts";
import { SUPERVISOR_ENV } from "../../legs/supervisor-argv.ts";
import { hostOverrides } from "../../host/proc.ts";
import { anySettingsFile } from "../../settings/lookup.ts";
import type { Settings } from "../../settings/settings.ts";
import { cliPaths } from "../paths.ts";
import { writeNote, writeOut } from "../io.ts";
import { repeatedFlag } from "../repeated-flag.ts";
import type { LegRunner, QueueArgs } from "../agent-queue.ts";
import { mark } from "../../util/profile.ts";

/** "0 completed, 1 completed_empty/failed, …" from the status table; `running` is no outcome of its own. */
function exitCodesByStatus(): string {
  const byCode = new Map<number, string[]>();
  for (const [status, code] of Object.entries(EXIT_CODE_BY_STATUS)) if (status !== "running") byCode.set(code, [...(byCode.get(code) ?? []), status]);
  return [...byCode].map(([code, statuses]) => `${code} ${statuses.join("/")}`).join(", ");
}

const note = (line: string) => writeNote(line);

export default command({
  description:
      `Run a command as a tracked leg: li agent [options] -- <command…>. Exit ${exitCodesByStatus()}, ${ExitCode.unavailable} cannot start or the outcome could not be recorded, ${ExitCode.usage} usage. When li's stdin is a terminal the command reads /dev/null.`,
  examples: ["li agent --timeout=30m --artifact=report=out/report.json -- make test", "li agent -r SESSION_ID -- make test"],
  // Opened by the leg only when it persists: a foreground leg still runs when the ledger cannot be opened (§8.4).
  ledger: "create",
  // --no-persist records nothing: the ledger's opener is not even loaded (--queue and --detach refuse it before any open).
  opensNoLedger: (args) => args.persist === false,
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
    if (readyValue) return (await import("../agent-leg.ts")).supervise(args, passthrough, readyValue, open, agentSettings, scheduleRun);
    if (scheduleRun !== undefined) throw new UsageError("--schedule-run is li's own: li watch starts a leased run's leg with it");
    const queueArgs = queueFlags(parsed as Record<string, unknown>, rawArgs);
    if (queueArgs.queue !== undefined) {
      hostOverrides();
      const workdir = process.cwd();
      const settings = await agentSettings(args, workdir, note);
      const { submitQueued } = await import("../agent-queue.ts");
      mark("queue modules loaded");
      // Waiting for its turn in the foreground holds the ledger for as long as the queue takes: outside the
      // host's connection slots (§20), as li wait is, so waiting runs never starve the host's legs.
      if (!args.detach) {
        (await import("../../ledger/early-open.ts")).closeUnusedEarly();
        (await import("../../ledger/slot-use.ts")).holdLedgerLong();
      }
      // The leg's machinery loads only if the run's turn comes here.
      const runner: LegRunner = { json: args.json === true, note, run: async (req, hooks, ledger) => (await import("../agent-leg.ts")).runQueuedLeg(req, hooks, ledger, settings, workdir) };
      return submitQueued(args, queueArgs, passthrough, { open, settings, workdir, runner });
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
    if (req.detach) return detach(req);
    const { runLeg } = await import("../agent-leg.ts");
    mark("leg modules loaded");
    return runLeg(req, open, settings, workdir);
  },
});

/** The detaching parent of `li agent --detach`: starts the supervisor (which runs the leg) and prints the session id it recorded. */
async function detach(req: AgentRequest): Promise<number> {
  // The supervisor's warnings go to its log: a bad --notify is worth saying here, where someone reads it.
  if (req.notify !== null) (await (await import("../../legs/notify.ts")).LegNotifier.load({ notifyFlag: req.notify, settings: null, log: note })).resolve({ sessionId: "", branchId: "" });
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

