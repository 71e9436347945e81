// A signal to li after its handlers are up but before the command starts (§8.1): the leg ends by it through
// the normal teardown, the command never starts, li exits 143/130 — at each point between setup and spawn.

import { describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { SETUP_PENDING_FILE } from "../../src/legs/rundir.ts";
import { pidFromFile, signalPid } from "../helpers/until.ts";
import { agentHome, rows } from "./agent-harness.ts";
import { legAt } from "./leg-at.ts";

const EXPECTED = {
  SIGTERM: { exit: 143, status: "cancelled", reason: "run.cancelled.sigterm" },
  SIGHUP: { exit: 143, status: "cancelled", reason: "run.cancelled.sigterm" },
  SIGINT: { exit: 130, status: "aborted", reason: "run.aborted.user" },
} as const;

describe("a signal to li before the command starts", () => {
  for (const point of ["beforeSetup", "afterSetup", "beforeSpawn"] as const) {
    for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"] as const) {
      const want = EXPECTED[signal];
      test(`${signal} at ${point}: the leg ends ${want.status} (${want.reason}) without starting the command; li exits ${want.exit}`, async () => {
        const home = agentHome();
        const started = path.join(home.scratch, "started");
        const leg = legAt(home, point, "pause", ["sh", "-c", 'echo started > "$1"', "mark", started]);
        const pid = await pidFromFile(leg.paused, `the leg paused at ${point}`);
        signalPid(pid, signal, { what: "the paused li" });
        const r = await leg.out;
        expect({ code: r.code, stderr: r.stderr }).toEqual({ code: want.exit, stderr: `${signal} before the command started: it was not started\n` });
        expect(JSON.parse(r.stdout)).toMatchObject({ status: want.status, reason_code: want.reason, exit: want.exit });
        // Never started: no file, no command markers, no exit code; the teardown recorded the outcome.
        expect(fs.existsSync(started)).toBe(false);
        const [session] = await rows<Record<string, unknown>>(home.db, "SELECT status, status_reason_code, exit_code, ended_at FROM sessions");
        expect(session).toMatchObject({ status: want.status, status_reason_code: want.reason, exit_code: null });
        expect(session!.ended_at).not.toBeNull();
        const legs = await rows<Record<string, unknown>>(home.db, "SELECT status, reason_code, command_pid, exit_code, ended_at, state_root FROM legs");
        expect(legs).toHaveLength(1);
        expect(legs[0]).toMatchObject({ status: want.status, reason_code: want.reason, command_pid: null, exit_code: null });
        expect(legs[0]!.ended_at).not.toBeNull();
        // Setup was done: the run directory is an ordinary one, not an orphan candidate.
        expect(fs.existsSync(path.join(String(legs[0]!.state_root), SETUP_PENDING_FILE))).toBe(false);
      }, 30_000);
    }
  }

  test("a signal while the command runs still reaches its group once (the trap is the same one)", async () => {
    const home = agentHome();
    const leg = legAt(home, "afterSpawn", "pause", ["sleep", "30"]);
    const pid = await pidFromFile(leg.paused, "the leg paused after its spawn");
    signalPid(pid, "SIGTERM", { what: "the paused li" });
    const r = await leg.out;
    expect(r.code).toBe(143);
    const [legRow] = await rows<Record<string, unknown>>(home.db, "SELECT status, reason_code, exit_code FROM legs");
    // The command was started and then stopped by the forwarded SIGTERM: 128 + 15.
    expect(legRow).toMatchObject({ status: "cancelled", reason_code: "run.cancelled.sigterm", exit_code: 143 });
  }, 30_000);
});
