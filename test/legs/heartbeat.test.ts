// The heartbeat's schedule through its module API (SPEC §8.5, §17): a fake backend whose transactions
// the test holds open and settles, and ticks the test fires itself, so no timing is assumed.

import { describe, expect, test } from "bun:test";
import type { Backend, Tx } from "../../src/ledger/backend.ts";
import { startHeartbeat, HEARTBEAT_INTERVAL_MS } from "../../src/legs/heartbeat.ts";
import { until } from "../helpers/until.ts";

interface HeldBeat {
  /** The time the beat wrote (refreshHeartbeat's `at`). */
  at: number;
  land(): void;
  fail(message: string): void;
}

/** A backend whose every transaction stays pending until the test lands or fails it. */
function heldBackend() {
  const beats: HeldBeat[] = [];
  const backend = {
    transaction<T>(fn: (tx: Tx) => T | Promise<T>): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        const beat: HeldBeat = { at: Number.NaN, land: () => void 0, fail: () => void 0 };
        const tx = { refreshHeartbeat: (_legId: string, at: number) => ((beat.at = at), 1) } as unknown as Tx;
        const result = fn(tx);
        beat.land = () => void Promise.resolve(result).then(resolve, reject);
        beat.fail = (message) => reject(new Error(message));
        beats.push(beat);
      });
    },
  } as unknown as Backend;
  return { backend, beats };
}

/** The ticks of one heartbeat, fired by hand; `stopped` once its stop function ran. */
function manualTicks() {
  const state = { tick: (): void => void 0, intervalMs: 0, stopped: false };
  const every = (intervalMs: number, tick: () => void) => {
    state.intervalMs = intervalMs;
    state.tick = tick;
    return () => void (state.stopped = true);
  };
  return { state, every };
}

/** A clock that says 1000, 1001, … and counts how often it was asked (once per beat started). */
function countingClock() {
  const clock = { asked: 0, now: () => 1000 + clock.asked++ };
  return clock;
}

describe("startHeartbeat", () => {
  test("a tick while a beat is in flight starts no transaction; the first tick after it lands beats with its own time", async () => {
    const { backend, beats } = heldBackend();
    const ticks = manualTicks();
    const clock = countingClock();
    const landed: number[] = [];
    const stop = startHeartbeat(backend, "leg-1", { now: clock.now, every: ticks.every, afterBeat: () => landed.push(beats.length) });
    expect(ticks.state.intervalMs).toBe(HEARTBEAT_INTERVAL_MS);

    ticks.state.tick();
    expect(beats.map((b) => b.at)).toEqual([1000]);
    // The ledger is slow: three more ticks come while the first beat is pending. None is a beat.
    for (let i = 0; i < 3; i++) ticks.state.tick();
    expect(beats).toHaveLength(1);
    expect(clock.asked).toBe(1);

    beats[0]!.land();
    await until("the first beat to land", () => landed.length === 1);
    ticks.state.tick();
    // The skipped ticks wrote nothing: the next beat's time is the clock's at the tick that started it.
    expect(beats.map((b) => b.at)).toEqual([1000, 1001]);
    ticks.state.tick();
    expect(beats).toHaveLength(2);

    stop();
    expect(ticks.state.stopped).toBe(true);
  });

  test("a beat that fails held open: no pile-up, one warning for the outage, one line when beats land again", async () => {
    const { backend, beats } = heldBackend();
    const ticks = manualTicks();
    const log: string[] = [];
    let landed = 0;
    startHeartbeat(backend, "leg-1", { now: countingClock().now, every: ticks.every, intervalMs: 5, log: (line) => log.push(line), afterBeat: () => landed++ });
    expect(ticks.state.intervalMs).toBe(5);

    // Beat after beat fails, each one held past a few ticks (a PostgreSQL call waiting out its deadline).
    for (let failure = 1; failure <= 3; failure++) {
      ticks.state.tick();
      ticks.state.tick();
      expect(beats).toHaveLength(failure);
      beats[failure - 1]!.fail(`connection refused ${failure}`);
      // The failed beat is over once a tick starts the next one; until then ticks start nothing.
      await until(`beat ${failure} to end`, () => (ticks.state.tick(), beats.length === failure + 1));
    }
    expect(log).toEqual(["warning: heartbeat failed (connection refused 1); retrying every beat, the command runs on"]);
    expect(landed).toBe(0);

    beats[3]!.land();
    await until("the beat after the outage to land", () => landed === 1);
    expect(log).toEqual(["warning: heartbeat failed (connection refused 1); retrying every beat, the command runs on", "heartbeat: the ledger takes heartbeats again"]);
  });
});
