import { describe, expect, test } from "bun:test";
import { listQueues, setQueue, QUEUE_DEFAULTS } from "../../src/schedule/queues.ts";
import { submitRun } from "../../src/schedule/submit.ts";
import { UsageError } from "../../src/util/errors.ts";
import { tempLedger } from "../helpers/ledger.ts";
import { until } from "../helpers/until.ts";

const request = { version: 1 as const, argv: ["true"], workdir: "/tmp", env: {}, options: {} };

describe("queues", () => {
  test("li queue set creates a queue with the defaults and changes only what it is given", async () => {
    const t = tempLedger();
    expect(await setQueue(t.ledger, "gpu", { parallel: 2 })).toMatchObject({ name: "gpu", parallel: 2, scope: QUEUE_DEFAULTS.scope, paused: 0, lease_attempts: 3 });
    expect(await setQueue(t.ledger, "gpu", { scope: "fleet", paused: true })).toMatchObject({ parallel: 2, scope: "fleet", paused: 1 });
    await expect(setQueue(t.ledger, "gpu", { parallel: -1 })).rejects.toBeInstanceOf(UsageError);
    await submitRun(t.ledger, { queue: "gpu", request });
    expect(await listQueues(t.ledger)).toEqual([expect.objectContaining({ name: "gpu", running: 0, queued: 1, waiting: 0 })]);
  });

  test("the queues a dispatch may lease from: those holding a queued run and not paused, by name, in one read", async () => {
    const t = tempLedger();
    await setQueue(t.ledger, "empty", { parallel: 1 });
    await submitRun(t.ledger, { queue: "b", request });
    await submitRun(t.ledger, { queue: "a", request });
    await submitRun(t.ledger, { queue: "held", request });
    await setQueue(t.ledger, "held", { paused: true });
    const waiting = await submitRun(t.ledger, { queue: "later", request, after: [(await submitRun(t.ledger, { queue: "b", request })).id] });
    expect(waiting.status).toBe("waiting_dependency");
    expect((await t.ledger.backend.schedule.queuesToDispatch()).map((q) => q.name)).toEqual(["a", "b"]);
    await setQueue(t.ledger, "held", { paused: false });
    expect((await t.ledger.backend.schedule.queuesToDispatch()).map((q) => q.name)).toEqual(["a", "b", "held"]);
  });

  test("a queue change wakes whoever waits on the ledger (a watcher sees it at its next pass, not its next poll)", async () => {
    const t = tempLedger();
    await setQueue(t.ledger, "q", {});
    const wake = await t.ledger.backend.wake();
    try {
      // The wake-up may need a moment to be armed (LISTEN); a change is made until one is seen.
      const before = wake.generation;
      await until("a queue change to move the change signal", async () => {
        await setQueue(t.ledger, "q", { paused: true });
        await wake.changed(before, 200);
        return wake.generation !== before;
      });
    } finally {
      wake.close();
    }
  });
});
