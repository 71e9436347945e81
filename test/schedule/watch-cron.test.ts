// The watcher's cron pass inside the real loop, on a real wake-up (the SQLite file watch; PostgreSQL's
// NOTIFY): a watcher that knows the next due time is an hour away asks the ledger again only when woken.
import { expect, test } from "bun:test";
import type { ChangeWake } from "../../src/ledger/wake.ts";
import type { LogEntry } from "../../src/watch/log.ts";
import { runWatch } from "../../src/watch/service.ts";
import { addSchedule, validateSchedule } from "../../src/schedule/schedules.ts";
import { scheduledRequest } from "../../src/schedule/schedule-request.ts";
import { tempLedger } from "../helpers/ledger.ts";
import { until } from "../helpers/until.ts";

const HOUR = 3600;

/** The wake, and the `since` of each wait the loop began: the loop's own progress, observed. */
function observed(wake: ChangeWake) {
  const waits: number[] = [];
  const counted: ChangeWake = {
    get generation() {
      return wake.generation;
    },
    get watching() {
      return wake.watching;
    },
    get via() {
      return wake.via;
    },
    changed: (since, ms) => (waits.push(since), wake.changed(since, ms)),
    close: () => wake.close(),
  };
  return { wake: counted, waits };
}

test("a schedule moved due while the watcher waits is fired on the commit's wake-up, not at the next due time it knew of", async () => {
  const t = tempLedger();
  const request = JSON.stringify(scheduledRequest({ argv: ["true"], cwd: undefined, timeout: undefined, passEnv: [], workdir: "/", env: {} }));
  for (const name of ["early", "later"]) await addSchedule(t.ledger, validateSchedule({ name, cron: "0 * * * *", timeZone: "UTC", overlap: "queue", missed: "latest", queue: "q" }), request);
  const thisHour = Math.floor(Date.now() / 1000 / HOUR) * HOUR;
  const rows = t.rows();
  await rows.run("UPDATE schedules SET next_due_at = ? WHERE name = 'early'", thisHour - HOUR);
  const { wake, waits } = observed(await t.ledger.backend.wake());
  await until("the wake-up to be armed", () => wake.watching);
  const entries: LogEntry[] = [];
  const stop = new AbortController();
  // A poll of 50 ms: every poll would find "later" due if the loop asked the ledger on each one.
  const running = runWatch({ ledger: t.ledger, wake, log: (e) => void entries.push(e), signal: stop.signal, delivery: { hostId: "h" } }, { once: false, sweepIntervalSeconds: 3600, phantomGraceSeconds: 60, phantomHours: 1, pruneKeepDays: null, pollSeconds: 0.05 });
  const fired = (name: string) => entries.some((e) => e.action === "schedule_fire" && e.schedule === name && e.outcome === "fired");
  await until("the watcher to fire the early schedule", () => fired("early"));
  // Settled: the loop waits on the wake's current generation (no commit of its own left to look at).
  await until("the loop to wait with nothing pending", () => waits.length > 0 && waits.at(-1) === wake.generation && waits.filter((g) => g === wake.generation).length >= 3);
  await rows.run("UPDATE schedules SET next_due_at = ? WHERE name = 'later'", thisHour - HOUR);
  await until("the watcher to fire the later schedule", () => fired("later"), { timeoutMs: 10_000 });
  stop.abort();
  expect((await running).errors).toBe(0);
  wake.close();
}, 60_000);
