// The watcher's outage report (§17): one line when the ledger is lost, one when every step that failed has
// run again, parts of a step included.

import { describe, expect, test } from "bun:test";
import { OutageLog } from "../../src/watch/outage.ts";

function outageLog() {
  const entries: Record<string, unknown>[] = [];
  let now = 0;
  const log = new OutageLog((entry) => entries.push(entry), () => now);
  return { log, entries, advance: (ms: number) => (now += ms) };
}

describe("OutageLog", () => {
  test("a part of a step that failed (schedule:settle) is over once its step runs to its end", () => {
    // Before: the part stayed failing forever, and a watcher whose dispatch step had failed in an outage
    // never logged ledger_back (watch-outage.test.ts waited for it in vain).
    const { log, entries, advance } = outageLog();
    log.failed("schedule:settle", "ledger x: connection closed");
    log.failed("deliver", "ledger x: connection closed");
    advance(3000);
    log.succeeded("deliver");
    expect(entries.map((e) => e.action)).toEqual(["error"]);
    log.succeeded("schedule");
    expect(entries).toEqual([
      { action: "error", during: "schedule:settle", message: "ledger x: connection closed" },
      { action: "ledger_back", down_seconds: 3, errors_not_logged: 1 },
    ]);
  });

  test("a step's success ends only its own parts: another step sharing its first letters stays failing", () => {
    const { log, entries } = outageLog();
    log.failed("cron:nightly", "ledger x: connection closed");
    log.failed("cronjob", "ledger x: connection closed");
    log.succeeded("cron");
    expect(entries.map((e) => e.action)).toEqual(["error"]);
    log.succeeded("cronjob");
    expect(entries.map((e) => e.action)).toEqual(["error", "ledger_back"]);
  });

  test("a success of a step that never failed says nothing", () => {
    const { log, entries } = outageLog();
    log.succeeded("schedule");
    expect(entries).toEqual([]);
  });
});
