// How argv names a command (src/cli/route.ts): main.ts routes with it and the early ledger open looks
// ahead with it, so both must read argv the same way.

import { describe, expect, test } from "bun:test";
import { splitArgv, walk } from "../../src/cli/route.ts";
import { isGroup } from "../../src/cli/tree-node.ts";
import { UsageError } from "../../src/util/errors.ts";

describe("splitArgv", () => {
  test("takes --db out of li's own tokens (both spellings), keeps what follows -- for the leg", () => {
    expect(splitArgv(["--db", "/x.db", "agent", "--json", "--", "make", "--db", "y"])).toEqual({
      tokens: ["agent", "--json"],
      passthrough: ["make", "--db", "y"],
      dbFlag: "/x.db",
      wantsHelp: false,
    });
    expect(splitArgv(["wait", "--db=postgres://h/d", "abc"])).toMatchObject({ tokens: ["wait", "abc"], dbFlag: "postgres://h/d", passthrough: null });
  });

  test("--help or -h before -- asks for help; after -- it is the leg's", () => {
    expect(splitArgv(["wait", "-h"]).wantsHelp).toBe(true);
    expect(splitArgv(["agent", "--help"]).wantsHelp).toBe(true);
    expect(splitArgv(["agent", "--", "grep", "--help"]).wantsHelp).toBe(false);
  });

  test("--db without a value is a usage error naming the flag", () => {
    for (const argv of [["--db"], ["wait", "--db="], ["--db", "", "ls"]]) {
      expect(() => splitArgv(argv)).toThrow(new UsageError("flag --db needs a path or a postgres:// URL"));
    }
  });
});

describe("walk", () => {
  test("stops at the command the words name, with the index of the first token it did not take", () => {
    const w = walk(["events", "consumers", "add", "ci"]);
    expect(isGroup(w.node)).toBe(false);
    expect(w).toMatchObject({ path: ["events", "consumers", "add"], next: 3 });
  });

  test("stops at a group on a flag, at the end, or at a word the group does not have", () => {
    for (const [tokens, path, next] of [
      [["events", "--consumer", "ci"], ["events"], 1],
      [["state"], ["state"], 1],
      [["state", "nope"], ["state"], 1],
      [[], [], 0],
    ] as const) {
      const w = walk(tokens);
      expect(isGroup(w.node)).toBe(true);
      expect({ path: w.path, next: w.next }).toEqual({ path: [...path], next });
    }
  });
});
