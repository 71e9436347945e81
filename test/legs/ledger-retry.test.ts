// §17's bounded retry (src/legs/ledger-retry.ts) on a clock the test moves: every attempt is told what is
// left of the budget, and an attempt that waits as long as it is allowed (SQLite waiting out a lock)
// never carries the retries past --ledger-retry.

import { expect, test } from "bun:test";
import { RETRY_LOCK_WAIT_MS, retryLockWaitMs, retryUnreachable, type Attempt } from "../../src/legs/ledger-retry.ts";

/** A clock in ms that only the test (and the fake sleep) moves. */
function fakeTime() {
  let now = 0;
  return { clockMs: () => now, sleep: async (ms: number) => void (now += ms), spend: (ms: number) => void (now += ms), now: () => now };
}

const unreachable: Attempt<never> = { ok: false, retry: true, error: new Error("busy") };

test("each attempt is told what is left of the budget, and the last is not past it", async () => {
  const time = fakeTime();
  const told: number[] = [];
  await retryUnreachable(async (leftMs) => {
    told.push(leftMs);
    time.spend(retryLockWaitMs(leftMs)); // waits for the lock as long as it may, then fails
    return unreachable;
  }, { seconds: 5, clockMs: time.clockMs, sleep: time.sleep });
  expect(told[0]).toBe(5000);
  for (let i = 1; i < told.length; i++) expect(told[i]!).toBeLessThan(told[i - 1]!);
  expect(told.at(-1)!).toBeGreaterThanOrEqual(0);
  expect(time.now()).toBe(5000);
});

test("an attempt bounded by retryLockWaitMs ends the retries at the budget, where a busy timeout's eight retries would overshoot", async () => {
  const busyTimeoutMs = 5000;
  const run = async (waitOf: (leftMs: number) => number) => {
    const time = fakeTime();
    await retryUnreachable(async (leftMs) => {
      time.spend(waitOf(leftMs));
      return unreachable;
    }, { seconds: 3, clockMs: time.clockMs, sleep: time.sleep });
    return time.now();
  };
  expect(await run((left) => retryLockWaitMs(left))).toBe(3000);
  // The unbounded attempt of before: 8 x the busy timeout each time.
  expect(await run(() => 8 * busyTimeoutMs)).toBe(40_000);
});

test("retryLockWaitMs: at most a second, never more than is left, never negative", () => {
  expect(retryLockWaitMs(60_000)).toBe(RETRY_LOCK_WAIT_MS);
  expect(retryLockWaitMs(250.7)).toBe(250);
  expect(retryLockWaitMs(0)).toBe(0);
  expect(retryLockWaitMs(-3)).toBe(0);
});

test("a success or a refusal ends the retries at once", async () => {
  const time = fakeTime();
  let calls = 0;
  const refused = await retryUnreachable(async () => (calls++, { ok: false, retry: false, error: new Error("read-only") }), { seconds: 5, clockMs: time.clockMs, sleep: time.sleep });
  expect([refused.ok, calls, time.now()]).toEqual([false, 1, 0]);
  const done = await retryUnreachable(async (left) => (left < 5000 ? { ok: true, value: left } : unreachable), { seconds: 5, clockMs: time.clockMs, sleep: time.sleep });
  expect(done).toEqual({ ok: true, value: 4750 });
});
