import { describe, expect, test } from "bun:test";
import { entryArgv, SUPERVISOR_ARGV_ENV, SUPERVISOR_ENV } from "../../src/legs/supervisor-argv.ts";

describe("the supervisor's request rides in its environment, not its argv (§18)", () => {
  test("without the variable the argv is the process's own", () => {
    expect(entryArgv(["ls", "--json"], {})).toEqual(["ls", "--json"]);
  });

  test("a supervisor's visible `agent` becomes the request, and the variable is gone from the environment", () => {
    const env: Record<string, string | undefined> = { [SUPERVISOR_ENV]: "fd:3", [SUPERVISOR_ARGV_ENV]: JSON.stringify(["agent", "--db", "postgres://u:pw@h/db", "--", "sleep", "1"]) };
    expect(entryArgv(["agent"], env)).toEqual(["agent", "--db", "postgres://u:pw@h/db", "--", "sleep", "1"]);
    expect(SUPERVISOR_ARGV_ENV in env).toBe(false);
  });

  test("any other shape is refused in one line naming the variable", () => {
    const cases: [string[], Record<string, string>, string][] = [
      [["agent"], { [SUPERVISOR_ARGV_ENV]: '["agent"]' }, `set without ${SUPERVISOR_ENV}`],
      [["ls"], { [SUPERVISOR_ENV]: "fd:3", [SUPERVISOR_ARGV_ENV]: '["agent"]' }, "set for a command other than the supervisor's"],
      [["agent"], { [SUPERVISOR_ENV]: "fd:3", [SUPERVISOR_ARGV_ENV]: "agent --db x" }, "not a JSON array"],
      [["agent"], { [SUPERVISOR_ENV]: "fd:3", [SUPERVISOR_ARGV_ENV]: '["state", "prune"]' }, "not the argv of li agent"],
      [["agent"], { [SUPERVISOR_ENV]: "fd:3", [SUPERVISOR_ARGV_ENV]: '["agent", 3]' }, "not the argv of li agent"],
    ];
    for (const [argv, env, why] of cases) expect(() => entryArgv(argv, env)).toThrow(`${SUPERVISOR_ARGV_ENV}: ${why}`);
  });
});
