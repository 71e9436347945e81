// Schedules' due times (SPEC §19) as pure functions of a cron expression, a time zone and an injected
// "now": which due times a pass decides, which of them fire and which were missed, and what an overlap
// does. The parsing, the calendar, time zones and DST are croner's (never a hand-written parser).

import { Cron } from "croner";
import { UsageError } from "../util/errors.ts";
import type { MissedPolicy, OverlapPolicy } from "../lifecycle/schedules.ts";

/**
 * How late a due time may be decided and still fire on time. A watcher decides every pass (about once a
 * second); one held up by a long delivery pass or restarted within this still fires. Past it, the due
 * time was missed (a stopped watcher, a host down) and the missed policy decides.
 */
export const ON_TIME_GRACE_SECONDS = 60;

/**
 * The most missed due times one decision records one by one. A minutely schedule whose watchers were
 * down for a month would otherwise write 43,200 skipped runs in one pass: the latest ones are
 * recorded, and the oldest of them says earlier ones were dropped.
 */
export const MAX_DECIDED = 100;

export interface CronSpec {
  /** The expression as given (five fields, or a nickname such as @daily). */
  readonly expression: string;
  /** An IANA zone (Europe/Berlin, UTC): the fleet agrees on due times whatever each host's zone. */
  readonly timeZone: string;
}

/**
 * Croner's options for li: standard five-field cron (no seconds field: the watcher decides once a second,
 * so a seconds field would promise what it cannot keep); Vixie cron's rule for which jobs are fixed-time
 * in DST (`30 2,14 * * *` runs once after a spring-forward gap and once in a repeated hour, as in cron).
 */
function cronOf(spec: CronSpec): Cron {
  return new Cron(spec.expression, { timezone: spec.timeZone, mode: "5-part", fixedTimeRule: "no-wildcard", paused: true });
}

/** Whether `zone` is an IANA time zone this runtime knows. */
export function isTimeZone(zone: string): boolean {
  if (zone.trim() === "" || zone !== zone.trim()) return false;
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/** This machine's time zone, recorded with a schedule added without --tz (so every host agrees on it). */
export function localTimeZone(): string {
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  return zone && isTimeZone(zone) ? zone : "UTC";
}

/** Croner's message without its class prefix ("CronPattern: …"). */
function libraryMessage(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).replace(/^Cron\w*:\s*/, "");
}

/**
 * A validated schedule spec, or a UsageError naming the flag. The expression must also have a next due
 * time (a February 30th never comes).
 */
export function parseCronSpec(expression: string, timeZone: string, flags: { cron: string; tz: string } = { cron: "--cron", tz: "--tz" }): CronSpec {
  if (!isTimeZone(timeZone)) throw new UsageError(`${flags.tz}: ${JSON.stringify(timeZone)} is not a time zone (an IANA name such as UTC or Europe/Berlin)`);
  const spec = { expression: expression.trim(), timeZone };
  let cron: Cron;
  try {
    cron = cronOf(spec);
  } catch (error) {
    throw new UsageError(`${flags.cron}: ${JSON.stringify(expression)} is not a cron expression (five fields: minute hour day-of-month month day-of-week): ${libraryMessage(error)}`);
  }
  if (cron.nextRun(new Date(0)) === null) throw new UsageError(`${flags.cron}: ${JSON.stringify(expression)} never falls due`);
  return spec;
}

/** The first due time strictly after `after` (Unix seconds), or null when there is none. */
export function nextDueAfter(spec: CronSpec, after: number): number | null {
  return nextOf(cronOf(spec), after);
}

function nextOf(cron: Cron, after: number): number | null {
  // Croner strips milliseconds and searches from the next whole second, so whole seconds compare exactly.
  const next = cron.nextRun(new Date(Math.floor(after) * 1000));
  return next === null ? null : next.getTime() / 1000;
}

/**
 * The due times in [first, until], oldest first, where `first` is itself a due time (a schedule's
 * cursor, made by nextDueAfter): at most `limit`; `dropped` when older ones were left out.
 */
export function dueTimesWithin(spec: CronSpec, first: number, until: number, limit = MAX_DECIDED): { times: number[]; dropped: boolean } {
  const cron = cronOf(spec);
  const times: number[] = [];
  let at: number | null = first;
  while (at !== null && at <= until) {
    if (times.length === limit) {
      // More than `limit` in the window: the latest `limit` of them (croner walks back from the end),
      // so a long outage costs a bounded pass whatever the expression.
      const latest = cron
        .previousRuns(limit, new Date((Math.floor(until) + 1) * 1000))
        .map((d) => d.getTime() / 1000)
        .filter((t) => t <= until && t >= first)
        .reverse();
      return { times: latest, dropped: true };
    }
    times.push(at);
    at = nextOf(cron, at);
  }
  return { times, dropped: false };
}

export type FireAction = "fire" | "skip_missed";

export interface FireDecision {
  readonly dueAt: number;
  readonly action: FireAction;
}

export interface Decision {
  /** Oldest first. */
  readonly decisions: FireDecision[];
  /** The schedule's cursor after this pass: its next due time after `now`, or null when it has none. */
  readonly nextDueAt: number | null;
  /** Older missed due times were not recorded one by one (more than MAX_DECIDED in the window). */
  readonly dropped: boolean;
}

/**
 * What one pass at `now` decides for a schedule whose cursor (its first undecided due time) is
 * `cursor`: every due time in [cursor, now]. One decided within ON_TIME_GRACE_SECONDS fires; older ones
 * were missed: `skip` records each as skipped, `latest` fires the newest due time of the window (when
 * none fired on time) and records the older ones as skipped.
 */
export function decideDue(spec: CronSpec, missed: MissedPolicy, cursor: number, now: number, grace = ON_TIME_GRACE_SECONDS): Decision {
  const nextDueAt = nextDueAfter(spec, now);
  if (cursor > now) return { decisions: [], nextDueAt: cursor, dropped: false };
  const { times, dropped } = dueTimesWithin(spec, cursor, now);
  const decisions: FireDecision[] = times.map((dueAt) => ({ dueAt, action: now - dueAt <= grace ? "fire" : "skip_missed" }));
  if (missed === "latest" && decisions.length > 0 && !decisions.some((d) => d.action === "fire")) {
    decisions[decisions.length - 1] = { dueAt: decisions[decisions.length - 1]!.dueAt, action: "fire" };
  }
  return { decisions, nextDueAt, dropped };
}

/** A fire while the schedule's previous run is still queued, waiting or running: skipped, or queued behind it. */
export function overlapAction(policy: OverlapPolicy, previousRunActive: boolean): "fire" | "skip_overlap" {
  return previousRunActive && policy === "skip" ? "skip_overlap" : "fire";
}

/** Parses one of `choices` for `flag`, or a UsageError listing them. */
export function parseChoice<T extends string>(value: string, choices: readonly T[], flag: string): T {
  if ((choices as readonly string[]).includes(value)) return value as T;
  throw new UsageError(`${flag}: ${JSON.stringify(value)} is not one of ${choices.join(", ")}`);
}
