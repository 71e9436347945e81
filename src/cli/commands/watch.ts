// `li watch` (SPEC §12.6): flags over settings, the single-instance lock, signals, then the watch loop.
import { defineCommand } from "citty";
import { pollingOnly, watchSqliteFile } from "../../ledger/sqlite/wake.ts";
import { loadSettings } from "../../settings/settings.ts";
import { parseDuration, parsePositiveNumber } from "../../util/duration.ts";
import { UsageError } from "../../util/errors.ts";
import { acquireWatchLock, lockPathFor, WatcherAlreadyRunningError, type WatchLock } from "../../watch/lock.ts";
import { createLog, LOG_FORMATS, type LogFormat } from "../../watch/log.ts";
import { runWatch, type WatchConfig } from "../../watch/service.ts";
import { cliLedger, cliPaths } from "../context.ts";

export default defineCommand({
  meta: {
    name: "watch",
    description:
      "The long-lived service: delivers owed notices on every ledger change, reaps phantom sessions and finalizes linked ones every sweep interval, prunes only with --prune-keep-days. One per ledger per host",
  },
  args: {
    once: { type: "boolean", description: "run one pass of everything and exit (for cron)" },
    sweepInterval: { type: "string", description: "DURATION between sweeps (default 30s; settings watch.sweep_interval)" },
    phantomGrace: { type: "string", description: "seconds after a dead leg's last heartbeat before it is reaped (default 60; watch.phantom_grace)" },
    phantomHours: { type: "string", description: "hours before a session with no process markers is reaped (default 1; watch.phantom_hours)" },
    pruneKeepDays: { type: "string", description: "also prune terminal sessions older than N days (default: never; watch.prune_keep_days). Never removes files" },
    logFormat: { type: "string", description: "text (default) or json: one line per action" },
  },
  async run({ args }) {
    const format = (args.logFormat ?? "text") as LogFormat;
    if (!LOG_FORMATS.includes(format)) throw new UsageError(`--log-format: ${JSON.stringify(args.logFormat)} is not one of ${LOG_FORMATS.join(", ")}`);
    const flags = {
      sweepInterval: args.sweepInterval === undefined ? undefined : parseDuration(args.sweepInterval, "--sweep-interval"),
      phantomGrace: args.phantomGrace === undefined ? undefined : parseDuration(args.phantomGrace, "--phantom-grace"),
      phantomHours: args.phantomHours === undefined ? undefined : parsePositiveNumber(args.phantomHours, "--phantom-hours"),
      pruneKeepDays: args.pruneKeepDays === undefined ? undefined : parsePositiveNumber(args.pruneKeepDays, "--prune-keep-days"),
    };
    const { settings, warnings } = loadSettings({ cwd: process.cwd() });
    for (const w of warnings) process.stderr.write(`li: warning: ${w}\n`);
    // A flag beats its key.
    const config: WatchConfig = {
      once: Boolean(args.once),
      sweepIntervalSeconds: flags.sweepInterval ?? settings.watch.sweepInterval,
      phantomGraceSeconds: flags.phantomGrace ?? settings.watch.phantomGrace,
      phantomHours: flags.phantomHours ?? settings.watch.phantomHours,
      pruneKeepDays: flags.pruneKeepDays ?? settings.watch.pruneKeepDays,
    };

    const paths = cliPaths();
    const ledger = cliLedger({ create: true });
    let lock: WatchLock | null = null;
    const log = createLog(format, (line) => process.stdout.write(line));
    const stop = new AbortController();
    let signals = 0;
    const onSignal = (name: NodeJS.Signals) => {
      // A second signal does not wait for the work in flight: claims it held expire and are taken again.
      if (++signals > 1) process.exit(0);
      log({ action: "stopping", signal: name });
      stop.abort();
    };
    try {
      const dbPath = paths.ledger.kind === "sqlite" ? paths.ledger.path : null;
      if (dbPath === null) throw new UsageError("li watch needs a SQLite ledger in this build (--db / LI_DB)");
      try {
        lock = acquireWatchLock(lockPathFor(dbPath));
      } catch (error) {
        if (!(error instanceof WatcherAlreadyRunningError)) throw error;
        process.stderr.write(`li: ${error.message}; refusing to start a second watcher\n`);
        return 1;
      }
      process.on("SIGINT", onSignal);
      process.on("SIGTERM", onSignal);
      const wake = config.once || process.env.LI_WATCH_FILES === "0" ? pollingOnly() : watchSqliteFile(dbPath);
      try {
        log({
          action: "start",
          ledger: dbPath,
          pid: process.pid,
          once: config.once,
          wake: wake.watching ? "files" : "poll",
          sweep_interval: config.sweepIntervalSeconds,
          phantom_grace: config.phantomGraceSeconds,
          phantom_hours: config.phantomHours,
          prune_keep_days: config.pruneKeepDays,
        });
        const report = await runWatch({ ledger, wake, log, signal: stop.signal, delivery: { liHome: paths.home } }, config);
        log({ action: "stop", ended: report.ended, passes: report.passes, sweeps: report.sweeps, delivered: report.delivered, failed: report.failed, dead: report.dead, reaped: report.reaped, finalized: report.finalized, pruned_sessions: report.pruned_sessions, errors: report.errors });
      } finally {
        wake.close();
      }
      return 0;
    } finally {
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
      lock?.release();
      ledger.close();
    }
  },
});
