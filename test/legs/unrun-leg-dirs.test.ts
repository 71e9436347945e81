// A leg that never runs leaves no run directory behind. Its directory is allocated before its setup
// transaction (with a setup-pending marker, §6); when the setup is refused where persistence is required
// (a detached leg), or a continuation finds its session already ended, nothing runs and no row names the
// directory, so li removes it at once rather than leaving it to li watch's orphan sweep an hour later.

import { describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { runAgent } from "../../src/legs/agent.ts";
import { PersistenceSetupError } from "../../src/legs/leg.ts";
import { tempLedger } from "../helpers/ledger.ts";
import { agentDepsOn, agentRequest } from "./run-agent.ts";

describe("a leg that never runs (§6)", () => {
  test("a setup refused where persistence is required (a detached leg's) removes the run directory it was allocated", async () => {
    const t = tempLedger();
    const runsRoot = path.join(t.home, "runs");
    const allocated: string[] = [];
    const refused = await runAgent(
      agentRequest(),
      agentDepsOn(t, {
        requirePersistence: true,
        legHooks: { beforeSetup: (plan) => void allocated.push(plan.run.stateRoot) },
        alsoInSetup: () => {
          throw new Error("the ledger refused the setup");
        },
      }),
    ).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(PersistenceSetupError);
    // It was there, marker and all, when the setup began; it is gone with the refusal.
    expect(allocated).toHaveLength(1);
    expect(fs.existsSync(allocated[0]!)).toBe(false);
    expect(fs.readdirSync(runsRoot)).toEqual([]);
    expect((await t.dump()).sessions).toEqual([]);
  });

  test("a continuation whose session ended between legs removes its own run directory; the leg that ran keeps its", async () => {
    const t = tempLedger();
    const runsRoot = path.join(t.home, "runs");
    const allocated: string[] = [];
    const outcome = await runAgent(
      agentRequest({ argv: ["sleep", "30"], timeout: 0.2, autoResume: 1 }),
      agentDepsOn(t, {
        killGraceMs: 100,
        legHooks: {
          beforeSetup: async (plan) => {
            allocated.push(plan.run.stateRoot);
            // The first leg timed out and deferred; before the second joins, someone ends the session.
            if (allocated.length === 2) await t.ledger.updateStatus("session", plan.sessionId, { newStatus: "cancelled", reasonCode: "run.cancelled.manual_kill" });
          },
        },
      }),
    );
    expect(outcome.legs).toBe(2);
    expect(outcome.result.status).toBe("cancelled");
    expect(allocated).toHaveLength(2);
    expect(fs.existsSync(path.join(allocated[0]!, "run.json"))).toBe(true);
    expect(fs.existsSync(allocated[1]!)).toBe(false);
    expect(fs.readdirSync(runsRoot)).toEqual([path.basename(allocated[0]!)]);
    expect((await t.ledger.backend.listLegs(outcome.plan.sessionId)).map((leg) => leg.state_root)).toEqual([allocated[0]!]);
  }, 30_000);
});
