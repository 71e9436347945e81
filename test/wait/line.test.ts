import { describe, expect, test } from "bun:test";
import { formatWaitLine, toOutcome, waitJson } from "../../src/wait/line.ts";

const target = { kind: "session" as const, id: "s-1", input: "s-1" };

describe("the frozen line", () => {
  test("has exactly five tab-separated fields in the documented order", () => {
    const o = toOutcome(target, { status: "failed", reason: "run.failed.exit_nonzero", artifactDir: "/a b/art", exitCode: 137 });
    expect(formatWaitLine(o)).toBe("s-1\tstatus=failed\treason=run.failed.exit_nonzero\tartifact_dir=/a b/art\texit_code=137");
  });
  test("an unregistered or missing reason prints unknown; a missing dir and exit code print -", () => {
    expect(formatWaitLine(toOutcome(target, { status: "completed", reason: "made.up.code", artifactDir: null, exitCode: null }))).toBe("s-1\tstatus=completed\treason=unknown\tartifact_dir=-\texit_code=-");
    expect(toOutcome(target, { status: "completed", reason: null, artifactDir: "", exitCode: 0 }).reason).toBe("unknown");
  });
  test("a gone row is status=unknown and unsuccessful", () => {
    const o = toOutcome(target, null);
    expect(formatWaitLine(o)).toBe("s-1\tstatus=unknown\treason=unknown\tartifact_dir=-\texit_code=-");
    expect(o.success).toBe(false);
  });
  test("success is completed for sessions and merged for plays; completed_empty is not success", () => {
    expect(toOutcome(target, { status: "completed", reason: null, artifactDir: null, exitCode: 0 }).success).toBe(true);
    expect(toOutcome(target, { status: "completed_empty", reason: null, artifactDir: null, exitCode: 0 }).success).toBe(false);
    expect(toOutcome({ kind: "play", id: "p", input: "p" }, { status: "merged", reason: null, artifactDir: null, exitCode: null }).success).toBe(true);
  });
  test("the JSON record carries the documented fields", () => {
    const o = toOutcome({ ...target, input: "br-1" }, { status: "completed", reason: "run.completed.ok", artifactDir: "/x", exitCode: 0 });
    expect(waitJson(o)).toEqual({ id: "s-1", kind: "session", input: "br-1", status: "completed", reason: "run.completed.ok", artifact_dir: "/x", exit_code: 0, success: true });
  });
});
