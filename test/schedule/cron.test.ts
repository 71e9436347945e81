import { describe, expect, test } from "bun:test";
import { decideDue, dueTimesWithin, isTimeZone, MAX_DECIDED, nextDueAfter, ON_TIME_GRACE_SECONDS, overlapAction, parseCronSpec, type CronSpec } from "../../src/schedule/cron.ts";
import { UsageError } from "../../src/util/errors.ts";

const at = (iso: string) => Date.parse(iso) / 1000;
const iso = (t: number | null) => (t === null ? null : new Date(t * 1000).toISOString());
const nightly: CronSpec = { expression: "0 2 * * *", timeZone: "UTC" };

describe("parseCronSpec", () => {
  test("accepts five fields and nicknames in an IANA zone", () => {
    expect(parseCronSpec("0 2 * * *", "Europe/Berlin")).toEqual({ expression: "0 2 * * *", timeZone: "Europe/Berlin" });
    expect(parseCronSpec("@daily", "UTC").expression).toBe("@daily");
  });

  test.each([["61 * * * *"], ["* * * *"], ["0 0 * * * *"], ["every night"], [""]])("refuses %p in one line naming --cron", (expression) => {
    const error = (() => {
      try {
        parseCronSpec(expression, "UTC");
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(UsageError);
    expect((error as Error).message).toStartWith("--cron: ");
    expect((error as Error).message).not.toContain("\n");
  });

  test("refuses an expression that never falls due", () => {
    expect(() => parseCronSpec("0 0 30 2 *", "UTC")).toThrow("--cron: \"0 0 30 2 *\" never falls due");
  });

  test.each([["Mars/Olympus"], [""], [" UTC"]])("refuses the zone %p naming --tz", (zone) => {
    expect(isTimeZone(zone)).toBe(false);
    expect(() => parseCronSpec("0 2 * * *", zone)).toThrow(/^--tz: /);
  });
});

describe("due times in a zone with DST (croner)", () => {
  const berlin = (expression: string): CronSpec => ({ expression, timeZone: "Europe/Berlin" });

  test("a fixed time in the spring-forward gap falls due once, right after the gap", () => {
    // 2026-03-29: clocks jump from 02:00 CET to 03:00 CEST; 02:30 does not exist that night.
    expect(iso(nextDueAfter(berlin("30 2 * * *"), at("2026-03-28T12:00:00Z")))).toBe("2026-03-29T01:00:00.000Z");
    expect(iso(nextDueAfter(berlin("30 2 * * *"), at("2026-03-29T01:00:00Z")))).toBe("2026-03-30T00:30:00.000Z");
  });

  test("a fixed time in the repeated hour falls due once, at its first occurrence", () => {
    // 2026-10-25: 03:00 CEST becomes 02:00 CET; 02:30 happens twice (00:30Z and 01:30Z).
    const { times } = dueTimesWithin(berlin("30 2 * * *"), at("2026-10-25T00:30:00Z"), at("2026-10-26T12:00:00Z"));
    expect(times.map(iso)).toEqual(["2026-10-25T00:30:00.000Z", "2026-10-26T01:30:00.000Z"]);
  });

  test("an interval job runs through the repeated hour on both occurrences", () => {
    const { times } = dueTimesWithin(berlin("0 * * * *"), at("2026-10-25T00:00:00Z"), at("2026-10-25T02:00:00Z"));
    expect(times.map(iso)).toEqual(["2026-10-25T00:00:00.000Z", "2026-10-25T01:00:00.000Z", "2026-10-25T02:00:00.000Z"]);
  });

  test("the same expression in another zone falls due at another instant", () => {
    expect(iso(nextDueAfter(nightly, at("2026-06-01T00:00:00Z")))).toBe("2026-06-01T02:00:00.000Z");
    expect(iso(nextDueAfter({ expression: "0 2 * * *", timeZone: "America/New_York" }, at("2026-06-01T00:00:00Z")))).toBe("2026-06-01T06:00:00.000Z");
  });
});

describe("decideDue", () => {
  const cursor = at("2026-06-01T02:00:00Z");

  test("a due time decided within the grace fires, once, and the cursor moves past now", () => {
    const now = cursor + 5;
    const d = decideDue(nightly, "skip", cursor, now);
    expect(d.decisions).toEqual([{ dueAt: cursor, action: "fire" }]);
    expect(iso(d.nextDueAt)).toBe("2026-06-02T02:00:00.000Z");
    // Deciding again from the new cursor at the same moment decides nothing.
    expect(decideDue(nightly, "skip", d.nextDueAt!, now).decisions).toEqual([]);
  });

  test("before the cursor nothing is due", () => {
    expect(decideDue(nightly, "skip", cursor, cursor - 1)).toEqual({ decisions: [], nextDueAt: cursor, dropped: false });
  });

  test("after downtime, missed=skip records every missed due time as skipped", () => {
    const now = cursor + 3 * 86400 + 3600; // three days and an hour later: four due times, all late
    const d = decideDue(nightly, "skip", cursor, now);
    expect(d.decisions.map((x) => x.action)).toEqual(["skip_missed", "skip_missed", "skip_missed", "skip_missed"]);
    expect(iso(d.nextDueAt)).toBe("2026-06-05T02:00:00.000Z");
  });

  test("after downtime, missed=latest fires the newest due time and skips the older ones", () => {
    const d = decideDue(nightly, "latest", cursor, cursor + 3 * 86400 + 3600);
    expect(d.decisions.map((x) => x.action)).toEqual(["skip_missed", "skip_missed", "skip_missed", "fire"]);
  });

  test("missed=latest does not fire a late one when a newer one is on time", () => {
    const every10: CronSpec = { expression: "*/10 * * * *", timeZone: "UTC" };
    const d = decideDue(every10, "latest", cursor, cursor + 1800 + 10);
    expect(d.decisions.map((x) => x.action)).toEqual(["skip_missed", "skip_missed", "skip_missed", "fire"]);
    expect(d.decisions[3]!.dueAt).toBe(cursor + 1800);
  });

  test("the grace is the boundary between on time and missed", () => {
    expect(decideDue(nightly, "skip", cursor, cursor + ON_TIME_GRACE_SECONDS).decisions[0]!.action).toBe("fire");
    expect(decideDue(nightly, "skip", cursor, cursor + ON_TIME_GRACE_SECONDS + 1).decisions[0]!.action).toBe("skip_missed");
  });

  test("a month of minutely due times decides only the latest MAX_DECIDED and says older ones were dropped", () => {
    const minutely: CronSpec = { expression: "* * * * *", timeZone: "UTC" };
    const now = cursor + 30 * 86400;
    const d = decideDue(minutely, "latest", cursor, now);
    expect(d.dropped).toBe(true);
    expect(d.decisions).toHaveLength(MAX_DECIDED);
    expect(d.decisions.at(-1)).toEqual({ dueAt: now, action: "fire" });
    expect(d.decisions[0]!.dueAt).toBe(now - (MAX_DECIDED - 1) * 60);
    expect(d.nextDueAt).toBe(now + 60);
  });
});

test("overlap: skip only while the previous run is active; queue always fires", () => {
  expect(overlapAction("skip", true)).toBe("skip_overlap");
  expect(overlapAction("skip", false)).toBe("fire");
  expect(overlapAction("queue", true)).toBe("fire");
});
