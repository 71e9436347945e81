import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { watchSqliteFile } from "../../src/ledger/sqlite/wake.ts";
import { pollingOnly, type ChangeWake } from "../../src/ledger/wake.ts";
import { WatcherLockLostError, type WatcherLock } from "../../src/ledger/watcher-lock.ts";
import { LedgerUnavailableError } from "../../src/util/errors.ts";
import type { Backend } from "../../src/ledger/backend.ts";
import type { LogEntry } from "../../src/watch/log.ts";
import { onceExitCode, runWatch, type WatchConfig } from "../../src/watch/service.ts";
import { tempLedger } from "../helpers/ledger.ts";
import { deadPid, insertSession, query, startFixture } from "../helpers/sweep-fixtures.ts";
import { isAlive, until } from "../helpers/until.ts";
import { HOST, legRegistration, RECORD, recorded, standing } from "../notify/helpers.ts";
import { testSqliteOnly } from "../helpers/backends.ts";

const now = () => Date.now() / 1000;
const DAY = 86400;

const config = (over: Partial<WatchConfig> = {}): WatchConfig => ({ once: true, sweepIntervalSeconds: 30, phantomGraceSeconds: 1, phantomHours: 1, pruneKeepDays: null, ...over });

function world() {
  const t = tempLedger();
  const entries: LogEntry[] = [];
  const status = async (id: string) => (await query<{ status: string; status_reason_code: string }>(t.ledger, "SELECT status, status_reason_code FROM sessions WHERE id = ?", id))[0] ?? null;
  return { ...t, entries, log: (e: LogEntry) => void entries.push(e), status, out: join(t.home, "notices") };
}

async function phantom(w: ReturnType<typeof world>, id: string) {
  const dead = await deadPid();
  const t = now();
  await insertSession(w.ledger, { id, startedAt: t - 120, updatedAt: t - 120, legs: [{ id: `${id}-leg`, pid: dead.pid, pidStartTicks: dead.startTicks, startedAt: t - 120, heartbeatAt: t - 100 }] });
  await legRegistration(w.ledger, { sessionId: id, legId: `${id}-leg`, argv: [RECORD, w.out] });
}

/** A wake that counts how often the loop has finished a pass and begun to wait: the loop's own progress, observed. */
function counted(wake: ChangeWake): { wake: ChangeWake; waits: () => number } {
  let waits = 0;
  return {
    wake: {
      get generation() {
        return wake.generation;
      },
      get watching() {
        return wake.watching;
      },
      get via() {
        return wake.via;
      },
      changed: (since, ms) => (waits++, wake.changed(since, ms)),
      close: () => wake.close(),
    },
    waits: () => waits,
  };
}

describe("the watch loop", () => {
  test("one pass reaps a phantom session, kills its orphaned command and delivers its registration", async () => {
    const w = world();
    const dead = await deadPid();
    const command = await startFixture("forever");
    const t = now();
    await insertSession(w.ledger, {
      id: "s",
      startedAt: t - 120,
      updatedAt: t - 120,
      legs: [{ id: "s-leg", pid: dead.pid, pidStartTicks: dead.startTicks, commandPid: command.pid, commandStartTicks: command.startTicks, startedAt: t - 120, heartbeatAt: t - 100 }],
    });
    await legRegistration(w.ledger, { sessionId: "s", legId: "s-leg", argv: [RECORD, w.out] });

    const report = await runWatch({ ledger: w.ledger, wake: pollingOnly(), log: w.log, signal: new AbortController().signal, delivery: { hostId: HOST } }, config());

    expect(await w.status("s")).toEqual({ status: "failed", status_reason_code: "session.phantom.process_dead" });
    await command.proc.exited;
    expect(isAlive(command.pid)).toBe(false);
    expect(recorded(w.out).map((l) => l.split(" ").slice(1, 4).join(" "))).toEqual(["failed session s"]);
    expect(report).toMatchObject({ ended: "once", passes: 1, sweeps: 1, reaped: 1, delivered: 1, errors: 0 });
    expect(w.entries.map((e) => e.action)).toEqual(["reap", "deliver"]);
  });

  /** A watcher lock whose checks answer from `answers` in turn (undefined: held), counting them. */
  function scriptedLock(answers: (Error | undefined)[]): WatcherLock & { checks: () => number } {
    let checks = 0;
    return {
      path: "test lock",
      ensureHeld: async () => {
        const answer = answers[checks++];
        if (answer) throw answer;
      },
      release: async () => {},
      checks: () => checks,
    };
  }

  test("a lock that cannot be checked (the ledger unreachable) skips that pass, logged; the next pass runs", async () => {
    const w = world();
    await standing(w.ledger, "h", [RECORD, w.out]);
    await w.ledger.createEntity("session", { id: "s" });
    await w.ledger.updateStatus("session", "s", { newStatus: "completed", reasonCode: "run.completed.ok" });
    const lock = scriptedLock([new LedgerUnavailableError("postgres://db:5432/li", "connection refused", { unreachable: true })]);
    const stop = new AbortController();
    const running = runWatch({ ledger: w.ledger, wake: pollingOnly(), lock, log: w.log, signal: stop.signal, delivery: { hostId: HOST } }, config({ once: false, pollSeconds: 0.01 }));
    await until("the notice", () => recorded(w.out).length === 1);
    stop.abort();
    const report = await running;
    expect(w.entries[0]).toMatchObject({ action: "error", during: "lock" });
    expect(report.errors).toBe(1);
    expect(report.delivered).toBe(1);
    expect(lock.checks()).toBeGreaterThanOrEqual(2);
  });

  test("a lock that keeps failing to be checked (the ledger away) is retried a whole poll apart, never in a tight loop, although the sweep it skips is overdue", async () => {
    const w = world();
    const away = () => new LedgerUnavailableError("postgres://db:5432/li", "no answer within 2s", { unreachable: true });
    const lock = scriptedLock([away(), away(), away()]);
    const base = pollingOnly();
    const waitedMs: number[] = [];
    const wake: ChangeWake = { ...base, get generation() { return base.generation; }, changed: (since, ms) => (waitedMs.push(ms), base.changed(since, ms)), close: () => base.close() };
    const stop = new AbortController();
    const running = runWatch({ ledger: w.ledger, wake, lock, log: w.log, signal: stop.signal, delivery: { hostId: HOST } }, config({ once: false, pollSeconds: 0.05, sweepIntervalSeconds: 30 }));
    await until("a pass after the failed checks", async () => lock.checks() >= 4 && w.entries.some((e) => e.action === "ledger_back"));
    stop.abort();
    const report = await running;
    // The outage is logged once, and once when the lock is checked again; the three failures all count.
    expect(w.entries.slice(0, 2).map((e) => [e.action, e.during ?? e.errors_not_logged])).toEqual([["error", "lock"], ["ledger_back", 2]]);
    expect(report.errors).toBe(3);
    expect(waitedMs.slice(0, 3)).toEqual([50, 50, 50]);
    expect(report.sweeps).toBe(1);
  });

  test("a lock another watcher of this host took while this one had lost it stops the watcher before any work", async () => {
    const w = world();
    await standing(w.ledger, "h", [RECORD, w.out]);
    await w.ledger.createEntity("session", { id: "s" });
    await w.ledger.updateStatus("session", "s", { newStatus: "completed", reasonCode: "run.completed.ok" });
    const lock = scriptedLock([new WatcherLockLostError("test lock")]);
    const report = await runWatch({ ledger: w.ledger, wake: pollingOnly(), lock, log: w.log, signal: new AbortController().signal, delivery: { hostId: HOST } }, config({ once: false, pollSeconds: 3600 }));
    expect(report).toMatchObject({ ended: "lock_lost", passes: 0, sweeps: 0, delivered: 0 });
    expect(w.entries.map((e) => e.action)).toEqual(["lock_lost"]);
    expect(recorded(w.out)).toEqual([]);
  });

  test("without a prune setting nothing is ever deleted; with one, old terminal sessions go", async () => {
    const w = world();
    const old = now() - 100 * DAY;
    await insertSession(w.ledger, { id: "old", status: "completed", startedAt: old, updatedAt: old });
    const deps = { ledger: w.ledger, wake: pollingOnly(), log: w.log, signal: new AbortController().signal, delivery: { hostId: HOST } };

    await runWatch(deps, config());
    expect((await w.status("old"))?.status).toBe("completed");

    await runWatch(deps, config({ pruneKeepDays: 30 }));
    expect(await w.status("old")).toBeNull();
    expect(w.entries.find((e) => e.action === "prune")).toMatchObject({ sessions: 1, keep_days: 30 });
  });

  testSqliteOnly("file-wake")("a commit wakes delivery at once, without waiting for the safety poll", async () => {
    const w = world();
    await standing(w.ledger, "h", [RECORD, w.out]);
    const { wake, waits } = counted(watchSqliteFile(w.dbPath));
    const stop = new AbortController();
    // A poll and a sweep interval far longer than the test's timeout: only the file wake-up can deliver in time.
    const running = runWatch({ ledger: w.ledger, wake, log: w.log, signal: stop.signal, delivery: { hostId: HOST } }, config({ once: false, pollSeconds: 3600, sweepIntervalSeconds: 3600 }));
    // The first pass is over and the loop waits, so the notice can only come from the commit's wake-up.
    await until("the first pass to end", () => waits() >= 1);
    await w.ledger.createEntity("session", { id: "s" });
    await w.ledger.updateStatus("session", "s", { newStatus: "completed", reasonCode: "run.completed.ok" });

    await until("the notice", () => recorded(w.out).length === 1);
    stop.abort();
    const report = await running;
    wake.close();
    expect(report).toMatchObject({ ended: "signal", delivered: 1, sweeps: 1 });
  });

  test("the reaper runs on the sweep interval, not on every wake-up", async () => {
    const w = world();
    let clock = 0;
    const stop = new AbortController();
    const { wake, waits } = counted(pollingOnly());
    const running = runWatch(
      { ledger: w.ledger, wake, log: w.log, signal: stop.signal, delivery: { hostId: HOST }, clockMs: () => clock },
      config({ once: false, pollSeconds: 0.01, sweepIntervalSeconds: 60 }),
    );
    await until("the first pass (with its sweep) to end", () => waits() >= 1);
    await phantom(w, "p");
    const before = waits();
    await until("three more passes, with no sweep due", () => waits() >= before + 3);
    expect((await w.status("p"))?.status).toBe("running");

    clock += 60_000;
    await until("the reaper", async () => (await w.status("p"))?.status === "failed");
    await until("the notice", () => recorded(w.out).length === 1);
    stop.abort();
    expect(await running).toMatchObject({ sweeps: 2, reaped: 1 });
  });

  test("an abort ends the loop after the pass in flight", async () => {
    const w = world();
    const stop = new AbortController();
    stop.abort();
    const report = await runWatch({ ledger: w.ledger, wake: pollingOnly(), log: w.log, signal: stop.signal }, config({ once: false }));
    expect(report).toMatchObject({ ended: "signal", passes: 0 });
  });
});

describe("errors in a pass", () => {
  test("an outage is logged once when it starts and once when every step runs again, however many passes meet it; every failure is still counted", async () => {
    const w = world();
    await phantom(w, "p");
    // The ledger goes away: every write transaction (each delivery pass buries exhausted claims in one;
    // the reaper checks with one that the ledger is back) fails as unreachable until `down` is false.
    const backend = w.ledger.backend as Backend;
    const real = backend.transaction.bind(backend);
    let down = false;
    (backend as { transaction: Backend["transaction"] }).transaction = ((fn: Parameters<Backend["transaction"]>[0]) =>
      down ? Promise.reject(new LedgerUnavailableError(backend.location, "connection refused", { unreachable: true })) : real(fn)) as Backend["transaction"];
    let clock = 0;
    const stop = new AbortController();
    const { wake, waits } = counted(pollingOnly());
    const running = runWatch(
      { ledger: w.ledger, wake, log: w.log, signal: stop.signal, delivery: { hostId: HOST }, clockMs: () => clock },
      config({ once: false, pollSeconds: 0.01, sweepIntervalSeconds: 60, phantomGraceSeconds: 3600 }),
    );
    await until("the first pass (with its sweep) to end", () => waits() >= 1);
    down = true;
    let before = waits();
    await until("five passes that meet the outage", () => waits() >= before + 5);
    clock += 60_000; // a sweep falls due during the outage: its reaper meets it too
    before = waits();
    await until("five more passes", () => waits() >= before + 5);
    expect(w.entries.filter((e) => e.action === "error")).toEqual([{ action: "error", during: "deliver", message: `ledger ${backend.location}: connection refused` }]);

    down = false;
    before = waits();
    await until("passes after the outage", () => waits() >= before + 3);
    // Delivery runs again, but the reaper has not: the outage is not over until it has.
    expect(w.entries.some((e) => e.action === "ledger_back")).toBe(false);
    clock += 60_000;
    await until("the end of the outage", () => w.entries.some((e) => e.action === "ledger_back"));
    stop.abort();
    const report = await running;
    expect(report.ledger_errors).toBeGreaterThanOrEqual(11);
    expect(report.errors).toBe(report.ledger_errors);
    expect(w.entries.filter((e) => e.action === "error")).toHaveLength(1);
    expect(w.entries.filter((e) => e.action === "ledger_back")).toEqual([{ action: "ledger_back", down_seconds: 120, errors_not_logged: report.ledger_errors - 1 }]);
    expect(w.entries.findIndex((e) => e.action === "ledger_back")).toBeGreaterThan(w.entries.findIndex((e) => e.action === "error"));
  });

  test("ledger_back's down_seconds counts from the start of the pass that met the outage, not from when its failing call gave up", async () => {
    const w = world();
    // One write fails after hanging 75 s (a call on a silent link given up at its deadline); the next pass's succeeds.
    const backend = w.ledger.backend as Backend;
    const real = backend.transaction.bind(backend);
    let clock = 0;
    let failNext = false;
    (backend as { transaction: Backend["transaction"] }).transaction = ((fn: Parameters<Backend["transaction"]>[0]) => {
      if (!failNext) return real(fn);
      failNext = false;
      clock += 75_000;
      return Promise.reject(new LedgerUnavailableError(backend.location, "no answer within 75s", { unreachable: true }));
    }) as Backend["transaction"];
    const stop = new AbortController();
    const { wake, waits } = counted(pollingOnly());
    const running = runWatch(
      { ledger: w.ledger, wake, log: w.log, signal: stop.signal, delivery: { hostId: HOST }, clockMs: () => clock },
      config({ once: false, pollSeconds: 0.01, sweepIntervalSeconds: 3600 }),
    );
    await until("the first pass to end", () => waits() >= 1);
    failNext = true;
    await until("the end of the outage", () => w.entries.some((e) => e.action === "ledger_back"));
    stop.abort();
    await running;
    expect(w.entries.filter((e) => e.action === "error")).toEqual([{ action: "error", during: "deliver", message: `ledger ${backend.location}: no answer within 75s` }]);
    expect(w.entries.filter((e) => e.action === "ledger_back")).toEqual([{ action: "ledger_back", down_seconds: 75, errors_not_logged: 0 }]);
  });

  testSqliteOnly("ledger-file")("a ledger that refuses the pass's writes is counted as a ledger error: --once exits 78; any other error is 1", async () => {
    const w = world();
    await phantom(w, "s");
    const { Database } = await import("bun:sqlite");
    const { SqliteBackend } = await import("../../src/ledger/sqlite/backend.ts");
    const { Ledger } = await import("../../src/ledger/ledger.ts");
    // The same file, opened read-only: every read works, every write is refused (SQLITE_READONLY).
    const readOnly = new Ledger(new SqliteBackend(new Database(w.dbPath, { readonly: true }), w.dbPath));
    const report = await runWatch({ ledger: readOnly, wake: pollingOnly(), log: w.log, signal: new AbortController().signal, delivery: { hostId: HOST } }, config());
    expect(report.errors).toBeGreaterThan(0);
    expect(report.ledger_errors).toBe(report.errors);
    expect(w.entries.filter((e) => e.action === "error").map((e) => e.message)).toContainEqual(expect.stringMatching(new RegExp(`^ledger ${w.dbPath}: read-only`)));
    expect((await w.status("s"))?.status).toBe("running");
    expect(onceExitCode(report)).toBe(78);
    expect(onceExitCode({ errors: 1, ledger_errors: 0 })).toBe(1);
    expect(onceExitCode({ errors: 0, ledger_errors: 0 })).toBe(0);
  });
});
