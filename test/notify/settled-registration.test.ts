// `li events --consumer cb:<registration>` once the leg's one notice settled: nothing owed, not "retired".

import { describe, expect, test } from "bun:test";
import { li } from "../helpers/cli.ts";
import type { LedgerRows } from "../helpers/ledger-rows.ts";
import { agentHome, rows } from "../legs/agent-harness.ts";
import { RECORD } from "./helpers.ts";

interface Registration {
  consumer: string;
  callback_retired: number | null;
  consumer_retired: number | null;
}

async function registrationOf(db: LedgerRows): Promise<Registration> {
  const [row] = await rows<Registration>(
    db,
    `SELECT c.consumer, c.retired_at AS callback_retired, k.retired_at AS consumer_retired
     FROM terminal_callbacks c JOIN consumers k ON k.name = c.consumer WHERE c.scope = 'leg'`,
  );
  if (!row) throw new Error("the leg wrote no registration");
  return row;
}

describe("a settled leg registration as a consumer", () => {
  test("delivered: li events --consumer cb:… exits 0 with an empty list (JSON and text)", async () => {
    const home = agentHome();
    const run = await li(["agent", "--notify", `${RECORD} ${home.scratch}/notice {status}`, "--", "true"], { home: home.home });
    expect(run.code).toBe(0);
    const registration = await registrationOf(home.db);
    // The push settled it: the engine retired the registration and its consumer.
    expect(registration.callback_retired).not.toBeNull();
    expect(registration.consumer_retired).not.toBeNull();

    const json = await li(["events", "--consumer", registration.consumer, "--json"], { home: home.home });
    expect({ code: json.code, stderr: json.stderr }).toEqual({ code: 0, stderr: "" });
    expect(JSON.parse(json.stdout)).toEqual([]);
    const text = await li(["events", "--consumer", registration.consumer], { home: home.home });
    expect({ code: text.code, stderr: text.stderr }).toEqual({ code: 0, stderr: "" });
    expect(text.stdout).not.toContain("session");
  }, 30_000);

  test("a consumer a person retired keeps its answer: exit 2, 'is retired'", async () => {
    const home = agentHome();
    expect((await li(["events", "consumers", "add", "ci"], { home: home.home })).code).toBe(0);
    expect((await li(["events", "consumers", "retire", "ci"], { home: home.home })).code).toBe(0);
    const listed = await li(["events", "--consumer", "ci"], { home: home.home });
    expect(listed.code).toBe(2);
    expect(listed.stderr).toContain("'ci' is retired");
  }, 30_000);

  test("acknowledging for a settled registration is still refused (only the listing changed)", async () => {
    const home = agentHome();
    expect((await li(["agent", "--notify", `${RECORD} ${home.scratch}/notice {status}`, "--", "true"], { home: home.home })).code).toBe(0);
    const consumer = (await registrationOf(home.db)).consumer;
    const ack = await li(["events", "ack", "--consumer", consumer, "no-such-event"], { home: home.home });
    expect(ack.code).toBe(2);
    expect(ack.stderr).toContain("is retired");
  }, 30_000);
});
