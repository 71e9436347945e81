// A watcher with a long safety poll still does its timed work on time, and replays what a leg spooled at once (§14 "Many hosts": LISTEN is the
// wake-up, the poll only the net): it sleeps until its next delivery retry, expiring claim or cron fire,
// not a whole poll. Every watcher here polls once an hour and sweeps once an hour, on both backends, on the
// backend's own wake-up; nothing commits after the work is set up, so only the watcher's own timing can
// bring it round within the test.
import { afterEach, expect, test } from "bun:test";
import type { ChangeWake } from "../../src/ledger/wake.ts";
import type { LogEntry } from "../../src/watch/log.ts";
import { runWatch, type WatchConfig, type WatchDeps } from "../../src/watch/service.ts";
import { submitRun } from "../../src/schedule/submit.ts";
import { startFixture } from "../helpers/sweep-fixtures.ts";
import { addSchedule, validateSchedule } from "../../src/schedule/schedules.ts";
import { scheduledRequest } from "../../src/schedule/schedule-request.ts";
import { tempLedger, type TempLedger } from "../helpers/ledger.ts";
import { until } from "../helpers/until.ts";
import { FAIL, HOST, RECORD, recorded, standing } from "../notify/helpers.ts";
import { join } from "node:path";
import { spoolWholeLegs } from "../spool/entries.ts";
import { spoolDirOf } from "../../src/spool/entry.ts";
import { spoolKey } from "../../src/spool/mac.ts";
import { mkdirSync } from "node:fs";

const HOUR = 3600;
const config: WatchConfig = { once: false, sweepIntervalSeconds: HOUR, phantomGraceSeconds: 60, phantomHours: 1, pruneKeepDays: null, pollSeconds: HOUR };

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A watcher on `t` with the backend's wake-up, waiting until that wake-up holds; stopped after the test. */
async function watcher(t: TempLedger, spoolDir?: string, schedule?: WatchDeps["schedule"]): Promise<{ entries: LogEntry[]; waits: () => number }> {
  const base = await t.ledger.backend.wake();
  await until("the wake-up to be armed", () => base.watching);
  let waits = 0;
  const wake: ChangeWake = {
    get generation() {
      return base.generation;
    },
    get watching() {
      return base.watching;
    },
    get via() {
      return base.via;
    },
    changed: (since, ms) => (waits++, base.changed(since, ms)),
    close: () => base.close(),
  };
  const entries: LogEntry[] = [];
  const stop = new AbortController();
  const running = runWatch({ ledger: t.ledger, wake, log: (e) => void entries.push(e), signal: stop.signal, delivery: { hostId: HOST, liHome: t.liHome }, ...(spoolDir ? { spoolDir } : {}), ...(schedule ? { schedule } : {}) }, config);
  cleanups.push(async () => {
    stop.abort();
    await running;
    wake.close();
  });
  return { entries, waits: () => waits };
}

test("a failed delivery is retried when its backoff ends (1 s, then 2 s), not at the next poll an hour away", async () => {
  const t = tempLedger();
  const out = join(t.home, "runs");
  await standing(t.ledger, "h", [FAIL, out]);
  await t.ledger.createEntity("session", { id: "s" });
  await t.ledger.updateStatus("session", "s", { newStatus: "completed", reasonCode: "run.completed.ok" });
  const w = await watcher(t);
  // The first attempt, then the retries at 1 s and 2 s after each failure: no commit wakes the watcher for them.
  const delivered = () => w.entries.filter((e) => e.action === "deliver").map((e) => e.state);
  await until("three attempts settled", () => delivered().length >= 3, { timeoutMs: 30_000 });
  expect(delivered().slice(0, 3)).toEqual(["retry", "retry", "retry"]);
  expect(recorded(out).length).toBeGreaterThanOrEqual(3);
}, 60_000);

test("a claim left by a dead watcher is taken over when it expires, not at the next poll an hour away", async () => {
  const t = tempLedger();
  const out = join(t.home, "notices");
  await standing(t.ledger, "h", [RECORD, out]);
  await t.ledger.createEntity("session", { id: "s" });
  await t.ledger.updateStatus("session", "s", { newStatus: "completed", reasonCode: "run.completed.ok" });
  const [event] = await t.rows().all<{ id: string }>("SELECT id FROM status_transitions WHERE entity_id = 's' AND terminal_event = 1");
  const [handler] = await t.rows().all<{ consumer: string }>("SELECT consumer FROM terminal_callbacks");
  // A predecessor claimed the delivery for 2 s and died: the claim holds it until then.
  expect(await t.ledger.transact(async (tx) => tx.notify.claim(event!.id, handler!.consumer, 2))).not.toBeNull();
  const w = await watcher(t);
  await until("the first pass to end", () => w.waits() >= 1);
  expect(recorded(out)).toEqual([]);
  await until("the delivery after the claim expired", () => w.entries.some((e) => e.action === "deliver"), { timeoutMs: 30_000 });
  expect(w.entries.filter((e) => e.action === "deliver").map((e) => e.state)).toEqual(["acked"]);
  expect(recorded(out).length).toBe(1);
}, 60_000);

test("a cron schedule due in 2 s fires then, with the poll and the sweeps an hour away", async () => {
  const t = tempLedger();
  const request = JSON.stringify(scheduledRequest({ argv: ["true"], cwd: undefined, timeout: undefined, passEnv: [], workdir: "/", env: {} }));
  await addSchedule(t.ledger, validateSchedule({ name: "soon", cron: "0 * * * *", timeZone: "UTC", overlap: "queue", missed: "latest", queue: "q" }), request);
  const w = await watcher(t);
  await until("the first pass to end", () => w.waits() >= 1);
  await t.rows().run("UPDATE schedules SET next_due_at = ? WHERE name = 'soon'", t.ledger.now() + 2);
  // That update woke the watcher (a commit): it learnt the new due time and sleeps until it.
  await until("the schedule to fire", () => w.entries.some((e) => e.action === "schedule_fire" && e.schedule === "soon" && e.outcome === "fired"), { timeoutMs: 30_000 });
}, 60_000);

test("an outcome a leg of this host spools is replayed at once, not at the next poll an hour away", async () => {
  const t = tempLedger();
  const spoolDir = spoolDirOf(t.liHome);
  // The spool directory and its key exist already (an earlier outage made them): the entry is a file inside
  // the directory, which no watch of the ledger's own files sees.
  mkdirSync(spoolDir, { recursive: true, mode: 0o700 });
  expect(spoolKey(spoolDir, { create: true }).ok).toBe(true);
  const w = await watcher(t, spoolDir);
  await until("the first pass to end", () => w.waits() >= 1);
  // The leg could not reach the ledger: no commit tells the watcher, only the spool directory does.
  const sessionId = spoolWholeLegs(spoolDir, 1, 1)[0]!;
  // Watched through the watcher's log: a probe of the ledger itself could wake a watcher of SQLite's files.
  await until("the spooled outcome replayed", () => w.entries.some((e) => e.action === "replay"), { timeoutMs: 30_000 });
  expect(w.entries.filter((e) => e.action === "replay").map((e) => e.session_id)).toEqual([sessionId]);
  expect(await t.rows().all<{ status: string }>("SELECT status FROM sessions WHERE id = ?", sessionId)).toEqual([{ status: "completed" }]);
}, 60_000);

test("a queued run left to a live foreground waiter of this host is taken within a second once that waiter dies (kill -9: nothing commits), not at the next poll an hour away", async () => {
  const t = tempLedger();
  const waiter = await startFixture("forever");
  const base = scheduledRequest({ argv: ["true"], cwd: undefined, timeout: undefined, passEnv: [], workdir: "/", env: {} });
  const run = await submitRun(t.ledger, { queue: "q", request: { ...base, foreground: { host_id: HOST, pid: waiter.pid, start_ticks: waiter.startTicks } } });
  const started: string[] = [];
  const w = await watcher(t, undefined, {
    lessee: { hostId: HOST, labels: [] },
    startLeg: async (r) => (started.push(r.id), { ok: true, sessionId: `session-of-${r.id}` }),
  });
  await until("the first pass to end", () => w.waits() >= 1);
  expect(started).toEqual([]);
  await waiter.stop();
  await until("the run taken once its waiter died", () => started.length > 0, { timeoutMs: 30_000 });
  expect(started).toEqual([run.id]);
}, 60_000);
