// `li schedule add/ls/rm/pause/resume` (SPEC §19): cron schedules whose fires the watchers submit to a queue.
// One command per export; src/cli/tree.ts places them under `li schedule`.
import type { CronScheduleRow } from "../../ledger/cron-store.ts";
import { UsageError } from "../../util/errors.ts";
import { command } from "../command.ts";
import { table, writeJson } from "../output.ts";
import { isoTime } from "../render.ts";
import { writeNote, writeOut } from "../io.ts";
import { repeatedFlag } from "../repeated-flag.ts";

const json = { type: "boolean", description: "print JSON" } as const;
const scheduleName = { type: "positional", valueHint: "NAME", description: "the schedule's name", required: true } as const;

/** The positional words after the command's own: exactly the declared ones, else a usage line. */
function words(rest: readonly (string | number)[], n: number, usage: string): string[] {
  if (rest.length !== n) throw new UsageError(`usage: ${usage}${rest.length > n ? ` (unexpected '${String(rest[n])}')` : ""}`);
  return rest.map(String);
}

/** The stored request as shown: the environment's names only (a --pass-env value may be a credential, §18). */
function requestJson(json: string) {
  const { env, ...rest } = JSON.parse(json) as { env?: Record<string, string> };
  return { ...rest, env_names: Object.keys(env ?? {}).sort() };
}

function scheduleJson(row: CronScheduleRow) {
  return {
    name: row.name,
    id: row.id,
    cron: row.cron,
    time_zone: row.time_zone,
    queue: row.queue,
    overlap: row.overlap,
    missed: row.missed,
    paused: row.paused !== 0,
    next_due_at: row.next_due_at,
    last_run_id: row.last_run_id,
    request: requestJson(row.request_json),
    created_at: row.created_at,
  };
}

/** `li schedule add NAME --cron EXPR --queue Q -- CMD…`. */
export const add = command({
  description:
    "Add a cron schedule: at each due time (in --tz, default this machine's zone, recorded with the schedule) a watcher submits CMD to --queue, exactly once across every host sharing the ledger. Due times missed while no watcher ran are recorded skipped (--missed skip) or only the newest runs (--missed latest); a due time while the previous fire's run is still queued or running is skipped (--overlap skip) or queued behind it (--overlap queue)",
  examples: ['li schedule add nightly --cron "0 2 * * *" --tz Europe/Berlin --queue builds -- make nightly', 'li schedule add hourly-sync --cron "0 * * * *" --overlap queue --queue sync -- ./sync.sh'],
  ledger: "create",
  takesCommand: true,
  args: {
    name: scheduleName,
    cron: { type: "string", valueHint: "EXPR", description: 'five fields: minute hour day-of-month month day-of-week ("0 2 * * *"), or @hourly, @daily, @weekly, @monthly' },
    tz: { type: "string", valueHint: "ZONE", description: "the IANA time zone the expression is read in (default: this machine's)" },
    overlap: { type: "string", valueHint: "skip|queue", description: "a due time while the previous run is active: skip it (default) or queue it" },
    missed: { type: "string", valueHint: "skip|latest", description: "due times missed while no watcher ran: record them skipped (default), or run the latest" },
    queue: { type: "string", valueHint: "QUEUE", description: "the queue each fire is submitted to" },
    cwd: { type: "string", valueHint: "DIR", description: "the command's working directory (default: this one)", complete: "dirs" },
    timeout: { type: "string", valueHint: "DURATION", description: "each run's --timeout" },
    "pass-env": { type: "string", valueHint: "NAME", description: "also give the command this variable as it is now (repeatable)" },
    json,
  },
  async run({ args, rawArgs, passthrough, ledger }) {
    const [name] = words(args._, 1, 'li schedule add NAME --cron "EXPR" --queue QUEUE [options] -- CMD…');
    const [{ validateSchedule, addSchedule }, { scheduledRequest }] = await Promise.all([import("../../schedule/schedules.ts"), import("../../schedule/schedule-request.ts")]);
    // Everything before the ledger opens: a refused schedule must not create one.
    const valid = validateSchedule({ name: name!, cron: args.cron, timeZone: args.tz, overlap: args.overlap, missed: args.missed, queue: args.queue });
    const request = scheduledRequest({ argv: passthrough, cwd: args.cwd, timeout: args.timeout, passEnv: repeatedFlag(rawArgs, "pass-env"), workdir: process.cwd(), env: process.env });
    const row = await addSchedule(ledger(), valid, JSON.stringify(request));
    if (args.json) writeJson(scheduleJson(row));
    else writeNote(`schedule ${row.name} added: "${row.cron}" in ${row.time_zone}, next due ${row.next_due_at === null ? "never" : isoTime(row.next_due_at)}, into queue ${row.queue}`);
    return 0;
  },
});

/** `li schedule ls`. */
export const ls = command({
  description: "List the cron schedules: expression and zone, queue, policies, next due time and the newest decision",
  examples: ["li schedule ls", "li schedule ls --json"],
  ledger: "existing",
  args: { json },
  async run({ args, ledger }) {
    words(args._, 0, "li schedule ls [--json]");
    const { listSchedules } = await import("../../schedule/schedules.ts");
    const views = await listSchedules(ledger());
    if (args.json) {
      writeJson(views.map((v) => ({ ...scheduleJson(v.schedule), last_fire: v.lastFire && { due_at: v.lastFire.due_at, outcome: v.lastFire.outcome, run_id: v.lastFire.run_id, host_id: v.lastFire.host_id } })));
      return 0;
    }
    const rows = views.map(({ schedule: s, lastFire: f }) => [
      s.name,
      s.cron,
      s.time_zone,
      s.queue,
      s.paused ? "paused" : "active",
      s.paused || s.next_due_at === null ? "-" : isoTime(s.next_due_at),
      f ? `${f.outcome} ${isoTime(f.due_at)}` : "-",
      `overlap=${s.overlap} missed=${s.missed}`,
    ]);
    writeOut(table([["NAME", "CRON", "ZONE", "QUEUE", "STATE", "NEXT DUE", "LAST", "POLICY"], ...rows]));
    return 0;
  },
});

/** `li schedule rm NAME`. */
export const rm = command({
  description: "Remove a schedule and its fire records; the runs it submitted stay in the ledger",
  examples: ["li schedule rm nightly", "li schedule rm nightly --json"],
  ledger: "existing",
  args: { name: scheduleName, json },
  async run({ args, ledger }) {
    const [name] = words(args._, 1, "li schedule rm NAME [--json]");
    const { removeSchedule } = await import("../../schedule/schedules.ts");
    const row = await removeSchedule(ledger(), name!);
    if (args.json) writeJson({ removed: row.name, id: row.id });
    else writeNote(`schedule ${row.name} removed`);
    return 0;
  },
});

function pauseCommand(paused: boolean) {
  const verb = paused ? "pause" : "resume";
  return command({
    description: paused
      ? "Pause a schedule: nothing fires and nothing is recorded missed until it is resumed (runs already submitted go on)"
      : "Resume a paused schedule from its next due time after now (the paused time is no backlog)",
    examples: [`li schedule ${verb} nightly`],
    ledger: "existing",
    args: { name: scheduleName, json },
    async run({ args, ledger }) {
      const [name] = words(args._, 1, `li schedule ${verb} NAME [--json]`);
      const { setSchedulePaused } = await import("../../schedule/schedules.ts");
      const row = await setSchedulePaused(ledger(), name!, paused);
      if (args.json) writeJson(scheduleJson(row));
      else writeNote(paused ? `schedule ${row.name} paused` : `schedule ${row.name} resumed, next due ${row.next_due_at === null ? "never" : isoTime(row.next_due_at)}`);
      return 0;
    },
  });
}

export const pause = pauseCommand(true);
export const resume = pauseCommand(false);
