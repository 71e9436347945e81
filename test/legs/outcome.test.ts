// The §8.1 mapping: how a command ended → status, reason, li's exit code; the recorded code is the command's own.

import { describe, expect, test } from "bun:test";
import { commandExitCode, EXIT_CODE_BY_STATUS, naturalTermination, TERMINATION_OUTCOMES } from "../../src/legs/outcome.ts";
import { POLICIES } from "../../src/lifecycle/policy.ts";
import { reasonRefusal } from "../../src/lifecycle/reasons.ts";

describe("outcome mapping", () => {
  test("li exits 0/1/1/124/130/143 for completed/completed_empty/failed/timed_out/aborted/cancelled", () => {
    expect(EXIT_CODE_BY_STATUS).toMatchObject({ completed: 0, completed_empty: 1, failed: 1, timed_out: 124, aborted: 130, cancelled: 143 });
  });

  test("every session status has an exit code and every termination a registered session reason", () => {
    for (const status of POLICIES.session.statuses) expect(EXIT_CODE_BY_STATUS).toHaveProperty(status);
    for (const { status, reason } of Object.values(TERMINATION_OUTCOMES)) {
      expect(POLICIES.session.statuses.has(status)).toBe(true);
      expect(reasonRefusal("session", reason)).toBeNull();
    }
  });

  test("the command's own code is its exit status, or 128+N for signal N, or none", () => {
    expect(commandExitCode(3, null)).toBe(3);
    expect(commandExitCode(null, "SIGKILL")).toBe(137);
    expect(commandExitCode(null, "SIGTERM")).toBe(143);
    expect(commandExitCode(null, null)).toBeNull();
  });

  test("an exit on its own: 0 is ok, non-zero and a signal of its own are failures", () => {
    expect(naturalTermination(0, null)).toBe("exited_ok");
    expect(naturalTermination(2, null)).toBe("exited_nonzero");
    expect(naturalTermination(null, "SIGSEGV")).toBe("own_signal");
  });
});
