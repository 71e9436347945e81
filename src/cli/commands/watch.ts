// `li watch` (SPEC §12.6): flags over settings, the single-instance lock, signals, then the watch loop.
import { command } from "../command.ts";
import { pollingOnly, wakeUpsDisabled, type ListenState } from "../../ledger/wake.ts";
import { handlerHost } from "../../notify/host.ts";
import { loadSettings } from "../../settings/settings.ts";
import { heartbeatMsFromEnv } from "../../legs/heartbeat.ts";
import { parseDuration, parsePositiveInt, parsePositiveNumber } from "../../util/duration.ts";
import { ExitCode, LedgerUnavailableError, UsageError } from "../../util/errors.ts";
import { NO_PATIENCE } from "../../ledger/patience.ts";
import { acquireWatchLock, WatcherAlreadyRunningError, type WatcherLock } from "../../watch/lock.ts";
import { createLog, LOG_FORMATS, type LogFormat, type WatchLog } from "../../watch/log.ts";
import { onceExitCode, runWatch, type WatchConfig } from "../../watch/service.ts";
import { startMetricsFile, validMetricsFile } from "../metrics-file.ts";
import { cliPaths } from "../paths.ts";
import { spoolDirOf } from "../../spool/entry.ts";
import { writeErr, writeOut, writeNote } from "../io.ts";
import { pruneProgressText, StatusLine } from "../progress.ts";
import { hostId, hostName } from "../../host/proc.ts";
import { startScheduledLeg } from "../../schedule/start.ts";
import { WarmSupervisor } from "../../legs/detach.ts";
import type { Paths } from "../../ledger/location.ts";
import { cliContext } from "../globals.ts";

/** The ledger as a leg started in another directory must name it: an absolute SQLite path, or the URL as given. */
function legLedgerEnv(paths: Paths): Record<string, string> {
  if (paths.ledger.kind === "sqlite") return { LI_DB: paths.ledger.path };
  const url = cliContext.dbFlag ?? process.env.LI_DB;
  return url ? { LI_DB: url } : {};
}
import type { PruneProgress } from "../../sweeps/prune.ts";

export default command({
  description:
      "The long-lived service: delivers owed notices on every ledger change, reaps phantom sessions, finalizes linked ones and removes the run directories of legs killed before their setup (after an hour) every sweep interval, prunes only with --prune-keep-days. One per ledger per host",
  examples: ["li watch", "li watch --once --log-format=json"],
  ledger: "create",
  longLived: true,
  args: {
    once: { type: "boolean", description: "run one pass of everything and exit (for cron): exit 1 when the pass logged errors, 78 when the ledger could not be written" },
    "sweep-interval": { type: "string", valueHint: "DURATION", description: "between sweeps (default 30s; settings watch.sweep_interval)" },
    "phantom-grace": { type: "string", valueHint: "DURATION", description: "after a dead leg's last heartbeat before it is reaped (default 60; 0 = as soon as its supervisor is positively dead; watch.phantom_grace)" },
    "phantom-hours": { type: "string", valueHint: "HOURS", description: "hours before a session with no process markers is reaped (default 1; watch.phantom_hours)" },
    "prune-keep-days": { type: "string", valueHint: "DAYS", description: "also prune terminal sessions older than N days (default: never; watch.prune_keep_days). Never removes the pruned legs' files" },
    "delivery-concurrency": { type: "string", valueHint: "N", description: "at most N handlers run at once; after a kill -9 of the watcher at most these run again (default 16; watch.delivery_concurrency)" },
    "fleet-lease": { type: "string", valueHint: "DURATION", description: "PostgreSQL: how often a watcher that is not the fleet's elected one tries the election, so a dead one's fleet-wide sweeps (expired claims and leases, cron fires, the prune) are taken over within it (default 30s; watch.fleet_lease)" },
    poll: { type: "string", valueHint: "DURATION", description: "the safety net between wake-ups for a wake-up lost (due retries, expiring claims and leases and cron fires wake the watcher on time whatever it is; default 30s, 1s while no wake-up holds; watch.poll)" },
    "log-format": { type: "string", valueHint: "text|json", description: "text (default) or json: one line per action" },
    "metrics-file": { type: "string", valueHint: "PATH", description: "write the ledger's metrics (li ui's /metrics text) to PATH atomically at start, every 15 s and at stop, for node_exporter's textfile collector (name it *.prom)" },
  },
  async run({ args, ledger: open }) {
    if (args._.length > 0) throw new UsageError(`li watch takes no arguments; unexpected '${String(args._[0])}'`);
    const format = (args["log-format"] ?? "text") as LogFormat;
    const metricsFile = args["metrics-file"] === undefined ? null : validMetricsFile(args["metrics-file"]);
    if (!LOG_FORMATS.includes(format)) throw new UsageError(`--log-format: ${JSON.stringify(args["log-format"])} is not one of ${LOG_FORMATS.join(", ")}`);
    const flags = {
      sweepInterval: args["sweep-interval"] === undefined ? undefined : parseDuration(args["sweep-interval"], "--sweep-interval"),
      phantomGrace: args["phantom-grace"] === undefined ? undefined : parseDuration(args["phantom-grace"], "--phantom-grace", { allowZero: true }),
      phantomHours: args["phantom-hours"] === undefined ? undefined : parsePositiveNumber(args["phantom-hours"], "--phantom-hours"),
      pruneKeepDays: args["prune-keep-days"] === undefined ? undefined : parsePositiveNumber(args["prune-keep-days"], "--prune-keep-days"),
      deliveryConcurrency: args["delivery-concurrency"] === undefined ? undefined : parsePositiveInt(args["delivery-concurrency"], "--delivery-concurrency"),
      fleetLease: args["fleet-lease"] === undefined ? undefined : parseDuration(args["fleet-lease"], "--fleet-lease"),
      poll: args.poll === undefined ? undefined : parseDuration(args.poll, "--poll"),
    };
    const { settings, warnings } = loadSettings({ cwd: process.cwd(), liHome: cliPaths().home });
    for (const w of warnings) writeNote(`warning: ${w}`);
    // A flag beats its key.
    const config: WatchConfig = {
      once: Boolean(args.once),
      sweepIntervalSeconds: flags.sweepInterval ?? settings.watch.sweepInterval,
      phantomGraceSeconds: flags.phantomGrace ?? settings.watch.phantomGrace,
      phantomHours: flags.phantomHours ?? settings.watch.phantomHours,
      pruneKeepDays: flags.pruneKeepDays ?? settings.watch.pruneKeepDays,
      fleetLeaseSeconds: flags.fleetLease ?? settings.watch.fleetLease,
      ...((flags.poll ?? settings.watch.poll) === null ? {} : { pollSeconds: (flags.poll ?? settings.watch.poll)! }),
    };

    const paths = cliPaths();
    // --once is a command like any other (its --ledger-retry, 10 s by default); the long-running watcher
    // waits for its ledger itself (waitForLock below), then rides out later outages pass by pass.
    const ledger = config.once ? open() : open(NO_PATIENCE);
    let lock: WatcherLock | null = null;
    // In the foreground on a terminal, the prune pass draws its progress on stderr; log lines go around it.
    const status = StatusLine.onStderr();
    const log = createLog(format, (line) => (status ? status.around(() => writeOut(line)) : writeOut(line)));
    const pruneProgress = status ? { update: (p: PruneProgress) => status.show(pruneProgressText(p)), done: () => status.clear() } : undefined;
    const stop = new AbortController();
    let signals = 0;
    const onSignal = (name: NodeJS.Signals) => {
      // A second signal does not wait for the work in flight: claims it held expire and are taken again.
      if (++signals > 1) process.exit(0);
      log({ action: "stopping", signal: name });
      stop.abort();
    };
    const host = handlerHost();
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
    try {
      try {
        // Per host as handlers are (LI_HOST_ID, else the machine id): one watcher delivers this host's handlers.
        lock = config.once ? await acquireWatchLock(ledger.backend, host) : await waitForLock(() => acquireWatchLock(ledger.backend, host), log, stop.signal);
      } catch (error) {
        if (!(error instanceof WatcherAlreadyRunningError)) throw error;
        writeNote(`${error.message}; refusing to start a second watcher`);
        return 1;
      }
      // Stopped by a signal while the ledger was down: nothing was done.
      if (lock === null) return 0;
      // PostgreSQL: only commits that concern this host's work, or the fleet's, wake it (§14 "Many hosts"). A
      // LISTEN that cannot be made is tried again with backoff; meanwhile the safety poll is the wake-up, and
      // the log says so (listen_down, listen_back).
      let listenDownSince: number | null = null;
      const onListen = (state: ListenState) => {
        if (!state.listening) {
          listenDownSince = performance.now();
          log({ action: "listen_down", wake: "poll", message: state.message });
        } else {
          const down = listenDownSince === null ? 0 : (performance.now() - listenDownSince) / 1000;
          listenDownSince = null;
          log({ action: "listen_back", wake: "listen", down_seconds: Math.round(down * 10) / 10 });
        }
      };
      const wake = config.once || wakeUpsDisabled() ? pollingOnly() : ledger.backend.watcherWake ? await ledger.backend.watcherWake(host, onListen) : await ledger.backend.wake();
      // §20: this host's legs hand their heartbeats and kill requests to the watcher (PostgreSQL only).
      const heartbeatMs = heartbeatMsFromEnv(process.env);
      const broker = config.once ? null : (await import("../../watch/leg-broker.ts")).startLegBroker(ledger, paths.home, log, heartbeatMs !== undefined ? { heartbeatMs } : {});
      let warm: WarmSupervisor | null = null;
      try {
        log({
          action: "start",
          ledger: ledger.location,
          host,
          pid: process.pid,
          once: config.once,
          wake: wake.via,
          sweep_interval: config.sweepIntervalSeconds,
          phantom_grace: config.phantomGraceSeconds,
          phantom_hours: config.phantomHours,
          prune_keep_days: config.pruneKeepDays,
        });
        // Legs of leased runs reach the same ledger as this watcher: a --db flag travels as LI_DB (never in an argv).
        const legEnv = { ...process.env, LI_HOME: paths.home, LI_RUNS_ROOT: paths.runsRoot, ...legLedgerEnv(paths) };
        // One supervisor kept waiting for the next leased run (§19): a dispatch pays no process start-up.
        // Started once this ledger has a queue, and after each use; a --once pass starts its legs cold.
        if (!config.once) {
          warm = new WarmSupervisor(legEnv);
          const first = warm;
          void Promise.resolve(ledger.backend.schedule.listQueues()).then((queues) => queues.length > 0 && first.prime(), () => {});
        }
        const startLeg = (run: Parameters<typeof startScheduledLeg>[0]) => startScheduledLeg(run, legEnv, warm ?? undefined);
        const schedule = { lessee: { hostId: hostId(), hostName: hostName(), labels: settings.watch.labels }, startLeg };
        const metrics = metricsFile === null ? null : startMetricsFile(metricsFile, { reads: ledger.backend.reads, home: paths.home }, (message) => log({ action: "error", during: "metrics_file", message }));
        const report = await runWatch({ ledger, wake, lock, log, signal: stop.signal, delivery: { liHome: paths.home, concurrency: flags.deliveryConcurrency ?? settings.watch.deliveryConcurrency }, runsRoot: paths.runsRoot, spoolDir: spoolDirOf(paths.home), schedule, ...(pruneProgress ? { pruneProgress } : {}) }, config);
        await metrics?.stop();
        log({ action: "stop", ended: report.ended, passes: report.passes, sweeps: report.sweeps, delivered: report.delivered, failed: report.failed, dead: report.dead, reaped: report.reaped, finalized: report.finalized, pruned_sessions: report.pruned_sessions, removed_run_dirs: report.removed_run_dirs, replayed: report.replayed, schedule_fires: report.schedule_fires, errors: report.errors });
        // For cron: a pass that logged errors is not a success (the long-running watcher logs and goes on).
        if (config.once) return onceExitCode(report);
        // Another watcher of this host runs now: this one stopped so that one host never runs two.
        if (report.ended === "lock_lost") return ExitCode.failure;
      } finally {
        warm?.close();
        broker?.close();
        wake.close();
      }
      return 0;
    } finally {
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
      await lock?.release();
    }
  },
});

/** Pauses between attempts to take the lock while the ledger is unreachable: 250 ms, doubling, at most 5 s. */
const FIRST_PAUSE_MS = 250;
const MAX_PAUSE_MS = 5000;

/**
 * Takes the watcher's lock, waiting for a ledger that is unreachable when li watch starts (a server still
 * down, §17): `ledger_down` is logged once, and the watcher starts when the ledger answers. A refusal is
 * thrown (exit 78); null when `signal` ended the waiting.
 */
async function waitForLock(take: () => Promise<WatcherLock>, log: WatchLog, signal: AbortSignal): Promise<WatcherLock | null> {
  const startedMs = performance.now();
  let pause = FIRST_PAUSE_MS;
  for (let told = false; ; told = true) {
    try {
      const lock = await take();
      if (told) log({ action: "ledger_back", during: "start", down_seconds: Math.round((performance.now() - startedMs) / 1000) });
      return lock;
    } catch (error) {
      if (!(error instanceof LedgerUnavailableError) || !error.unreachable) throw error;
      if (!told) log({ action: "ledger_down", during: "start", message: error.message });
    }
    if (await sleepUnlessAborted(pause, signal)) return null;
    pause = Math.min(pause * 2, MAX_PAUSE_MS);
  }
}

/** Sleeps `ms`; true when `signal` aborted (before or meanwhile). */
function sleepUnlessAborted(ms: number, signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve(true);
    const done = () => {
      clearTimeout(timer);
      resolve(signal.aborted);
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}
