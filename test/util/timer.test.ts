import { describe, expect, test } from "bun:test";
import { armTimer, delay, MAX_TIMER_STEP_MS } from "../../src/util/timer.ts";
import { until } from "../helpers/until.ts";

/** A clock the test moves by hand, counting how often the timer looked at it (each look is one re-arm). */
function handClock() {
  const clock = { now: 0, looks: 0, read: () => (clock.looks++, clock.now) };
  return clock;
}

describe("armTimer", () => {
  test("a delay longer than one setTimeout holds is re-armed until its deadline, never fired early", async () => {
    const clock = handClock();
    let fired = 0;
    // 30 days, in steps of 1 ms of real time: each step finds the deadline not reached and re-arms.
    const thirtyDays = 30 * 86_400_000;
    expect(thirtyDays).toBeGreaterThan(MAX_TIMER_STEP_MS);
    armTimer(thirtyDays, () => fired++, { maxStepMs: 1, clockMs: clock.read });
    await until("the timer to re-arm several times", () => clock.looks >= 10);
    expect(fired).toBe(0);
    clock.now = thirtyDays - 1;
    const looked = clock.looks;
    await until("another re-arm just before the deadline", () => clock.looks > looked + 2);
    expect(fired).toBe(0);
    clock.now = thirtyDays;
    await until("the timer to fire at its deadline", () => fired === 1);
    clock.now = 2 * thirtyDays;
    await delay(5);
    expect(fired).toBe(1);
  });

  test("disarming stops a re-armed timer", async () => {
    const clock = handClock();
    let fired = 0;
    const disarm = armTimer(1000, () => fired++, { maxStepMs: 1, clockMs: clock.read });
    await until("a re-arm", () => clock.looks >= 3);
    disarm();
    clock.now = 5000;
    const looks = clock.looks;
    await delay(20);
    expect(fired).toBe(0);
    expect(clock.looks).toBe(looks);
  });

  test("a short delay fires once; an infinite one never arms", async () => {
    let fired = 0;
    armTimer(1, () => fired++);
    await until("the short timer", () => fired === 1);
    const disarm = armTimer(Infinity, () => fired++);
    disarm();
    expect(fired).toBe(1);
  });
});
