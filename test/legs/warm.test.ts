// The teardown's and the after-commit hooks' modules load while the command runs (src/legs/leg.ts loadTeardown).

import { describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { runAgent } from "../../src/legs/agent.ts";
import { LegNotifier } from "../../src/legs/notify.ts";
import { TERMINATION_OUTCOMES } from "../../src/legs/outcome.ts";
import type { AfterCommit } from "../../src/legs/teardown/state.ts";
import { allocateRun } from "../../src/legs/rundir.ts";
import type { LegPlan } from "../../src/legs/setup.ts";
import { tempDir, tempLedger } from "../helpers/ledger.ts";
import { agentDepsOn, agentRequest } from "./run-agent.ts";

/** Runs one leg with a hook that records when it is warmed and when it runs, beside the leg's afterSpawn seam. */
async function legWithWarmHook(argv: string[]) {
  const t = tempLedger();
  const order: string[] = [];
  const hook: AfterCommit = Object.assign(() => void order.push("hook"), { warm: () => void order.push("warm") });
  const outcome = await runAgent(agentRequest({ argv }), agentDepsOn(t, { afterCommit: [hook], legHooks: { afterSpawn: () => void order.push("afterSpawn") } }));
  return { outcome, order };
}

describe("warming the teardown while the command runs", () => {
  test("a started command: each hook is warmed once, after the spawn and before it runs at step 10", async () => {
    const { outcome, order } = await legWithWarmHook(["true"]);
    expect(outcome.result).toMatchObject({ status: "completed", persisted: "written" });
    expect(order).toEqual(["warm", "afterSpawn", "hook"]);
  });

  test("a command that cannot start: the teardown still loads, warms the hook once and runs it", async () => {
    const { outcome, order } = await legWithWarmHook([path.join(tempDir(), "no-such-program")]);
    expect(outcome.result.reasonCode).toBe(TERMINATION_OUTCOMES.spawn_failed.reason);
    expect(order).toEqual(["warm", "hook"]);
  });

  test("the notice's hook warms the push only for a recorded leg", async () => {
    const t = tempLedger();
    const notifier = await LegNotifier.load({ notifyFlag: null, settings: null, log: () => {} });
    const runsRoot = path.join(t.home, "runs");
    fs.mkdirSync(runsRoot, { recursive: true });
    const plan = { run: allocateRun({ runsRoot }) } as unknown as LegPlan;
    expect(typeof notifier.afterCommit(plan, t.ledger).warm).toBe("function");
    expect(notifier.afterCommit(plan, null).warm).toBeUndefined();
  });
});
