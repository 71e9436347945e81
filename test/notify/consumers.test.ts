import { describe, expect, test } from "bun:test";
import { ackEvents, addConsumer, listOwed, retireConsumer } from "../../src/notify/consumers.ts";
import { UsageError } from "../../src/util/errors.ts";
import { complete, notifyWorld, runningSession } from "./helpers.ts";
import { onPostgres } from "../helpers/backends.ts";

async function finishedSession(ledger: Parameters<typeof runningSession>[0], id: string): Promise<string> {
  await runningSession(ledger, id);
  const outcome = await ledger.transition("session", id, complete());
  if (outcome.result !== "applied") throw new Error("not applied");
  return outcome.transition.transitionId;
}

describe("consumers", () => {
  test("a consumer is owed only what committed after it registered, and an unacked event stays listed however old", async () => {
    const w = notifyWorld();
    const { ledger } = w;
    await finishedSession(ledger, "before");
    const added = await addConsumer(ledger, "ci");
    expect(added.created).toBe(true);
    expect((await addConsumer(ledger, "ci")).created).toBe(false);
    const e1 = await finishedSession(ledger, "s1");
    const e2 = await finishedSession(ledger, "s2");
    expect((await listOwed(ledger, "ci")).map((r) => r.id)).toEqual([e1, e2]);

    w.clock.advance(400 * 86_400);
    expect((await listOwed(ledger, "ci")).map((r) => r.id)).toEqual([e1, e2]);
    expect(await ackEvents(ledger, "ci", [e1])).toEqual({ acked: 1, already: 0 });
    expect((await listOwed(ledger, "ci")).map((r) => r.id)).toEqual([e2]);
    // Idempotent.
    expect(await ackEvents(ledger, "ci", [e1])).toEqual({ acked: 0, already: 1 });
    expect(await w.sql("SELECT COUNT(*) AS n FROM terminal_deliveries")).toEqual([{ n: 1 }]);
  });

  test("an event that commits late with an older timestamp is still listed", async () => {
    const w = notifyWorld();
    const { ledger } = w;
    await runningSession(ledger, "slow");
    await addConsumer(ledger, "ci");
    w.clock.advance(100);
    const newer = await finishedSession(ledger, "fast");
    // The slow writer's clock reads earlier, but it commits after: its seq is higher.
    w.clock.advance(-50);
    const outcome = await ledger.transition("session", "slow", complete());
    if (outcome.result !== "applied") throw new Error("not applied");
    await ackEvents(ledger, "ci", [newer]);
    expect((await listOwed(ledger, "ci")).map((r) => r.id)).toEqual([outcome.transition.transitionId]);
  });

  test("parallel acknowledgements of one event make one row", async () => {
    const w = notifyWorld();
    const { ledger } = w;
    await addConsumer(ledger, "ci");
    const event = await finishedSession(ledger, "s1");
    const results = await Promise.all(Array.from({ length: 8 }, () => ackEvents(ledger, "ci", [event, event])));
    expect(results.reduce((n, r) => n + r.acked, 0)).toBe(1);
    expect(await w.sql("SELECT consumer, state FROM terminal_deliveries")).toEqual([{ consumer: "ci", state: "acked" }]);
  });

  test("acknowledging something that is not a terminal event names it and changes nothing", async () => {
    const w = notifyWorld();
    const { ledger } = w;
    await addConsumer(ledger, "ci");
    const event = await finishedSession(ledger, "s1");
    const before = await w.dump();
    const error = await ackEvents(ledger, "ci", [event, "no-such-event"]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UsageError);
    expect((error as Error).message).toContain("no-such-event");
    expect(await w.dump()).toEqual(before);
    await expect(listOwed(ledger, "nobody")).rejects.toBeInstanceOf(UsageError);
    await expect(addConsumer(ledger, "handler:x")).rejects.toBeInstanceOf(UsageError);
  });

  test("retiring releases what was owed in the same transaction", async () => {
    const w = notifyWorld();
    const { ledger } = w;
    await addConsumer(ledger, "ci");
    const e1 = await finishedSession(ledger, "s1");
    await finishedSession(ledger, "s2");
    await ackEvents(ledger, "ci", [e1]);
    // A half-processed delivery the consumer still held.
    await w.sql("INSERT INTO terminal_deliveries (transition_id, consumer, state, attempts, created_at, updated_at) SELECT id, 'ci', 'retry', 1, 0, 0 FROM status_transitions WHERE entity_id = 's2' AND terminal_event = 1");

    const retired = await retireConsumer(ledger, "ci");
    expect(retired.released).toBe(1);
    expect(await w.sql("SELECT consumer, state FROM terminal_deliveries")).toEqual([{ consumer: "ci", state: "acked" }]);
    expect(await w.sql("SELECT retired_at FROM consumers WHERE name = 'ci'")).toEqual([{ retired_at: w.clock.now() }]);
    await expect(listOwed(ledger, "ci")).rejects.toBeInstanceOf(UsageError);

    // One transaction: when the release fails, the consumer is not retired either.
    await addConsumer(ledger, "ci");
    await finishedSession(ledger, "s3");
    // A trigger is dialect SQL by nature: the same refusal, spelled for each backend.
    if (onPostgres) {
      await w.sql("CREATE FUNCTION no_release_f() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'release refused'; END $$");
      await w.sql("CREATE TRIGGER no_release BEFORE DELETE ON terminal_deliveries FOR EACH ROW EXECUTE FUNCTION no_release_f()");
    } else {
      await w.sql("CREATE TRIGGER no_release BEFORE DELETE ON terminal_deliveries BEGIN SELECT RAISE(ABORT, 'release refused'); END");
    }
    await w.sql("INSERT INTO terminal_deliveries (transition_id, consumer, state, attempts, created_at, updated_at) SELECT id, 'ci', 'retry', 1, 0, 0 FROM status_transitions WHERE entity_id = 's3' AND terminal_event = 1");
    await expect(retireConsumer(ledger, "ci")).rejects.toThrow("release refused");
    expect(await w.sql("SELECT retired_at FROM consumers WHERE name = 'ci'")).toEqual([{ retired_at: null }]);
  });
});
