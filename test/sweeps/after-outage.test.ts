// §17 "after an outage": a heartbeat's age counts from the later of the heartbeat and the moment the
// judging process regained the ledger, so legs are not reaped for heartbeats nobody could write; and a
// leg's failing heartbeats warn once, not once per beat.

import { describe, expect, test } from "bun:test";
import { startHeartbeat } from "../../src/legs/heartbeat.ts";
import type { Backend } from "../../src/ledger/backend.ts";
import { reaper } from "../../src/sweeps/reaper.ts";
import { hostEnv } from "../../src/sweeps/sweep.ts";
import { LedgerUnavailableError } from "../../src/util/errors.ts";
import { pollingOnly } from "../../src/ledger/wake.ts";
import { runWatch } from "../../src/watch/service.ts";
import { fakeClock, tempLedger } from "../helpers/ledger.ts";
import { ELSEWHERE, insertSession, query } from "../helpers/sweep-fixtures.ts";
import { until } from "../helpers/until.ts";
import type { LogEntry } from "../../src/watch/log.ts";
import { Database } from "bun:sqlite";
import { testSqliteOnly } from "../helpers/backends.ts";
import { expectInvariants } from "../legs/late-fixtures.ts";

const NOW = 1_800_000_000;
const GRACE = 600; // the default heartbeat grace for a leg of another host

/** A leg on another host whose last heartbeat is `age` seconds old. */
async function remoteLeg(ledger: Parameters<typeof insertSession>[0], id: string, age: number): Promise<void> {
  await insertSession(ledger, { id, startedAt: NOW - 7200, updatedAt: NOW - 7200, legs: [{ id: `${id}-leg`, hostId: ELSEWHERE, pid: 4242, pidStartTicks: 1, startedAt: NOW - 7200, heartbeatAt: NOW - age }] });
}

const statusOf = async (ledger: Parameters<typeof query>[0], id: string) => (await query<{ status: string }>(ledger, "SELECT status FROM sessions WHERE id = ?", id))[0]!.status;

describe("a heartbeat's age after an outage (§17)", () => {
  test("the reaper counts a stale heartbeat from the moment the ledger was regained, and reaps it once the grace passed since then", async () => {
    const clock = fakeClock(NOW);
    const { ledger, rows } = tempLedger({ now: clock.now });
    await remoteLeg(ledger, "stale", 20 * 60);
    const env = hostEnv();

    // Regained a minute ago: the 20-minute-old heartbeat is only a minute old for this judgement.
    const after = await reaper.runOnce(ledger, NOW, reaper.validate({}), { ...env, reachableSince: NOW - 60 });
    expect(after.swept).toBe(0);
    expect(await statusOf(ledger, "stale")).toBe("running");

    // The grace passed since the regain without a heartbeat: now it is dead.
    const later = await reaper.runOnce(ledger, NOW, reaper.validate({}), { ...env, reachableSince: NOW - GRACE - 1 });
    expect(later.swept).toBe(1);
    expect(await statusOf(ledger, "stale")).toBe("failed");
    await expectInvariants(rows());
  });

  test("without an outage the same leg is reaped (the seam changes nothing on a healthy ledger)", async () => {
    const { ledger, rows } = tempLedger({ now: fakeClock(NOW).now });
    await remoteLeg(ledger, "stale", 20 * 60);
    expect((await reaper.runOnce(ledger, NOW, reaper.validate({}), hostEnv())).swept).toBe(1);
    await expectInvariants(rows());
  });

  test("a watcher cut off from the ledger does not reap, after it reconnects, legs whose heartbeats could not be written", async () => {
    const clock = fakeClock(NOW);
    const { ledger, rows } = tempLedger({ now: clock.now });
    await remoteLeg(ledger, "remote", 5 * 60);
    // The ledger goes away for the watcher's first passes (a disk that is full, a lock held elsewhere).
    const backend = ledger.backend as Backend;
    const real = backend.transaction.bind(backend);
    let outage = true;
    (backend as { transaction: Backend["transaction"] }).transaction = ((fn: Parameters<Backend["transaction"]>[0]) =>
      outage ? Promise.reject(new LedgerUnavailableError(backend.location, "disk full", { unreachable: true })) : real(fn)) as Backend["transaction"];
    const entries: LogEntry[] = [];
    const stop = new AbortController();
    let ms = 0;
    const watching = runWatch(
      { ledger, wake: pollingOnly(), log: (e) => entries.push(e), signal: stop.signal, clockMs: () => ms, sweepEnv: hostEnv() },
      { once: false, sweepIntervalSeconds: 1, phantomGraceSeconds: 60, phantomHours: 1, pruneKeepDays: null, pollSeconds: 0.01 },
    );
    // The watcher meets the outage (its delivery pass writes); meanwhile the leg's heartbeat ages past the grace.
    await until("a pass that met the outage", () => entries.some((e) => e.action === "error" && e.during === "deliver"));
    clock.advance(10 * 60);
    outage = false;
    ms += 1000; // a sweep falls due
    await until("the sweep after the regain", () => entries.some((e) => e.action === "ledger_regained"));
    // The reaper of that same sweep runs to its end before the watcher stops.
    stop.abort();
    const report = await watching;

    // 15 minutes since its heartbeat, but the watcher has had the ledger only since now: not reaped.
    expect(await statusOf(ledger, "remote")).toBe("running");
    expect(report.reaped).toBe(0);
    expect(entries.find((e) => e.action === "ledger_regained")).toMatchObject({ heartbeat_ages_from: NOW + 600 });
    await expectInvariants(rows());
  });
});

describe("a leg's heartbeat during an outage (§17)", () => {
  test("failing beats warn once, not once per beat; the beat that lands again says so once", async () => {
    const lines: string[] = [];
    let failing = true;
    let beats = 0;
    const backend = {
      transaction: async () => {
        beats++;
        if (failing) throw new LedgerUnavailableError("/x/state.db", "disk full", { unreachable: true });
      },
    } as unknown as Backend;
    const stop = startHeartbeat(backend, "leg-1", { now: () => NOW, intervalMs: 5, log: (l) => lines.push(l) });
    try {
      await until("five failed beats", () => beats >= 5);
      expect(lines).toEqual(["warning: heartbeat failed (ledger /x/state.db: disk full); retrying every beat, the command runs on"]);
      failing = false;
      const landed = beats;
      await until("a beat after the outage", () => beats > landed + 2);
      expect(lines).toHaveLength(2);
      expect(lines[1]).toBe("heartbeat: the ledger takes heartbeats again");
    } finally {
      stop();
    }
  });

  testSqliteOnly("write-lock-held")("on SQLite a beat that meets another process's write lock gives up quickly (it does not hold the leg's thread for the busy timeout and its retries), and lands once the lock is gone", async () => {
    const t = tempLedger();
    const lines: string[] = [];
    const holder = new Database(t.dbPath);
    holder.run("PRAGMA busy_timeout = 5000");
    holder.run("BEGIN IMMEDIATE");
    let held = true;
    const stop = startHeartbeat(t.ledger.backend, "no-such-leg", { now: () => NOW, intervalMs: 20, log: (l) => lines.push(l) });
    try {
      // With the connection's 5 s busy timeout and its eight retries, one beat would block for ~40 s.
      await until("the first beat to give up while the lock is held", () => lines.length > 0);
      expect(lines[0]).toMatch(/^warning: heartbeat failed \(ledger .*locked by another process past the busy timeout.*\); retrying every beat, the command runs on$/);
      holder.run("COMMIT");
      held = false;
      await until("a beat after the lock is gone", () => lines.length > 1);
      expect(lines).toHaveLength(2);
    } finally {
      stop();
      if (held) holder.run("COMMIT");
      holder.close();
    }
    await expectInvariants(t.rows());
  });
});
