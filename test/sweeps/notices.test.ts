import { describe, expect, test } from "bun:test";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import type { Ledger } from "../../src/ledger/ledger.ts";
import { addHandler } from "../../src/notify/consumers.ts";
import { handlerHost } from "../../src/notify/host.ts";
import { pushTerminal } from "../../src/notify/push.ts";
import { registerLegCallback } from "../../src/notify/register.ts";
import { killSession } from "../../src/sweeps/kill.ts";
import { prune } from "../../src/sweeps/prune.ts";
import { reaper } from "../../src/sweeps/reaper.ts";
import { tempDir, tempLedger } from "../helpers/ledger.ts";
import { deadPid, insertSession, query } from "../helpers/sweep-fixtures.ts";

const now = () => Date.now() / 1000;

/** A running session whose supervisor is gone, with a leg registration that touches a file per event. */
async function deadLegWithNotice(ledger: Ledger, id: string, dir: string): Promise<void> {
  const gone = await deadPid();
  const t = now() - 600;
  await insertSession(ledger, { id, startedAt: t, updatedAt: t, legs: [{ id: `${id}-leg`, pid: gone.pid, pidStartTicks: gone.startTicks, startedAt: t, heartbeatAt: t }] });
  await ledger.transact(async (tx) => {
    await registerLegCallback(tx, { sessionId: id, legId: `${id}-leg`, argv: ["touch", join(dir, "fired-{status}-{event_id}")], origin: "--notify", now: now() });
  });
}

const fired = (dir: string) => readdirSync(dir).filter((f) => f.startsWith("fired-"));

describe("notices of sweep writes", () => {
  test("li kill pushes the notice of what it wrote, and its registration fires once", async () => {
    const { ledger } = tempLedger();
    const dir = tempDir();
    await deadLegWithNotice(ledger, "s", dir);
    const result = await killSession(ledger, "s", { graceSeconds: 5 }, { pushTerminal: (l, e) => pushTerminal(l, e) });
    expect(result.action).toBe("written");
    expect(fired(dir)).toEqual([`fired-cancelled-${result.transition!.transitionId}`]);
    expect(await query<{ state: string }>(ledger, "SELECT state FROM terminal_deliveries")).toEqual([{ state: "acked" }]);
  });

  test("a bulk sweep writes the transition but never runs a handler: the notice stays owed to durable delivery", async () => {
    const { ledger } = tempLedger();
    const dir = tempDir();
    await deadLegWithNotice(ledger, "s", dir);
    const summary = await reaper.runOnce(ledger, now(), reaper.validate({}));
    expect(summary.swept).toBe(1);
    expect(fired(dir)).toEqual([]);
    const owed = await ledger.backend.notify.owedToHandlers({ hostId: handlerHost(), limit: 10 });
    expect(owed.map((o) => o.transition_id)).toEqual([summary.transitions[0]!.transitionId]);
  });

  test("the prune keeps a session whose registration is still owed its notice, and prunes it once delivered", async () => {
    const { ledger } = tempLedger();
    const dir = tempDir();
    await deadLegWithNotice(ledger, "s", dir);
    // A standing handler for invocations only is never owed a session's events.
    await addHandler(ledger, { name: "inv-only", kinds: ["invocation"], ids: [], argv: ["true"], hostId: handlerHost() });
    const summary = await reaper.runOnce(ledger, now(), reaper.validate({}));
    const later = now() + 90 * 86400;

    const first = await prune.runOnce(ledger, later, prune.validate({}));
    expect([first.sessions, first.skipped_owed]).toEqual([0, 1]);

    await pushTerminal(ledger, summary.transitions[0]!);
    expect(fired(dir).length).toBe(1);
    const second = await prune.runOnce(ledger, later, prune.validate({}));
    expect([second.sessions, second.skipped_owed, second.registrations, second.deliveries]).toEqual([1, 0, 1, 1]);
    expect(await query(ledger, "SELECT * FROM consumers WHERE name LIKE 'cb:%'")).toEqual([]);
    expect(await query<{ name: string }>(ledger, "SELECT name FROM consumers")).toEqual([{ name: "handler:inv-only" }]);
  });

  test("a standing handler matching sessions holds the prune back until it acknowledges", async () => {
    const { ledger } = tempLedger();
    await addHandler(ledger, { name: "all-sessions", kinds: ["session"], ids: [], argv: ["true"], hostId: handlerHost() });
    await insertSession(ledger, { id: "s", startedAt: now(), updatedAt: now() });
    const outcome = await ledger.transition("session", "s", { newStatus: "completed", reasonCode: "run.completed.ok" });
    const later = now() + 90 * 86400;
    expect((await prune.runOnce(ledger, later, prune.validate({}))).skipped_owed).toBe(1);
    if (outcome.result !== "applied") throw new Error("setup");
    await pushTerminal(ledger, outcome.transition);
    expect((await prune.runOnce(ledger, later, prune.validate({}))).sessions).toBe(1);
  });
});
