// Issue 10 / SPEC §18 end to end through dist/li: each row of the table, reproduced as an attacker or a careless user would.

import { describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { li } from "../helpers/cli.ts";
import { fixture } from "../helpers/fixtures.ts";
import { agentHome, rows, sessionRow } from "../legs/agent-harness.ts";

async function agent(args: string[], opts: { home?: ReturnType<typeof agentHome>; env?: Record<string, string | undefined>; cwd?: string } = {}) {
  const home = opts.home ?? agentHome();
  const result = await li(["agent", "--json", ...args], { home: home.home, ...(opts.env ? { env: opts.env } : {}), ...(opts.cwd ? { cwd: opts.cwd } : {}) });
  const record = result.stdout.trim() ? JSON.parse(result.stdout) : null;
  return { ...result, record, home };
}

describe("durations past a timer's limit (§18)", () => {
  // Today's bug: a 30-day timer overflowed setTimeout and fired after 1 ms, so `sleep 1` timed out.
  test("--timeout 30d does not fire early: the command completes", async () => {
    const r = await agent(["--timeout", "30d", "--", "sleep", "1"]);
    expect(r.stderr).not.toContain("TimeoutOverflowWarning");
    expect(r.code).toBe(0);
    expect(sessionRow(r.home.db, r.record.session_id).status).toBe("completed");
  });

  test("agent.timeout: 30d from settings does not fire early either", async () => {
    const home = agentHome();
    fs.mkdirSync(home.home, { recursive: true });
    fs.writeFileSync(path.join(home.home, "settings.yaml"), "agent:\n  timeout: 30d\n");
    const r = await agent(["--", "sleep", "1"], { home });
    expect(r.stderr).not.toContain("TimeoutOverflowWarning");
    expect(r.code).toBe(0);
  });

  test("--timeout past 365 days is a usage error naming the flag; nothing is created", async () => {
    const home = agentHome();
    const r = await agent(["--timeout", "366d", "--", fixture("exit-with"), "0"], { home });
    expect(r.code).toBe(2);
    expect(r.stderr.trim()).toBe('li: --timeout: "366d" is longer than the maximum of 365d');
    expect(fs.existsSync(home.db)).toBe(false);
  });

  test("agent.timeout past 365 days warns naming the key and the leg runs without a deadline", async () => {
    const home = agentHome();
    fs.mkdirSync(home.home, { recursive: true });
    fs.writeFileSync(path.join(home.home, "settings.yaml"), "agent:\n  timeout: 400d\n");
    const r = await agent(["--", fixture("exit-with"), "0"], { home });
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("agent.timeout");
    expect(r.stderr).toContain("longer than the maximum of 365d; using the default");
  });

  test.each([
    ["wait", "--timeout"],
    ["wait", "--interval"],
    ["kill", "--grace"],
    ["watch", "--sweep-interval"],
    ["watch", "--phantom-grace"],
  ])("li %s %s past 365 days is a usage error naming the flag", async (command, flag) => {
    const home = agentHome();
    const r = await li([command, flag, "400d", ...(command === "watch" ? [] : ["some-id"])], { home: home.home });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`${flag}: "400d" is longer than the maximum of 365d`);
  });
});
