import { describe, expect, test } from "bun:test";
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import { passwordOfLocation, resolvePaths } from "../../src/ledger/location.ts";

describe("where the ledger lives (§3)", () => {
  test("LI_HOME holds state.db and runs/ by default", () => {
    const p = resolvePaths({ env: { LI_HOME: "/srv/li" }, cwd: "/work" });
    expect(p).toEqual({ home: "/srv/li", runsRoot: "/srv/li/runs", ledger: { kind: "sqlite", path: "/srv/li/state.db" } });
  });

  test("without LI_HOME it is ~/.li", () => {
    expect(resolvePaths({ env: {}, cwd: "/work" }).home).toBe(join(homedir(), ".li"));
  });

  test("relative, unnormalized and ~ paths are resolved as node:path would", () => {
    const cases: Record<string, string> = {
      "rel/home": resolve("/work/dir", "rel/home"),
      "../up": resolve("/work/dir", "../up"),
      "/a/./b/../c/": "/a/c",
      "/a//b": "/a/b",
      "~/x": join(homedir(), "x"),
      "/": "/",
    };
    for (const [given, want] of Object.entries(cases)) {
      expect({ given, home: resolvePaths({ env: { LI_HOME: given }, cwd: "/work/dir" }).home }).toEqual({ given, home: want });
    }
    expect(resolvePaths({ env: { LI_HOME: "/" }, cwd: "/" }).ledger).toEqual({ kind: "sqlite", path: "/state.db" });
  });

  test("--db beats LI_DB, which beats $LI_HOME/state.db; LI_RUNS_ROOT moves the run directories", () => {
    const env = { LI_HOME: "/h", LI_DB: "db/one.db", LI_RUNS_ROOT: "/runs" };
    expect(resolvePaths({ env, cwd: "/c" }).ledger).toEqual({ kind: "sqlite", path: "/c/db/one.db" });
    expect(resolvePaths({ env, cwd: "/c", dbFlag: "/x/two.db" }).ledger).toEqual({ kind: "sqlite", path: "/x/two.db" });
    expect(resolvePaths({ env: { ...env, LI_DB: "postgres://u:p@h/db" }, cwd: "/c" }).ledger).toEqual({ kind: "postgres", url: "postgres://u:p@h/db" });
    expect(resolvePaths({ env, cwd: "/c" }).runsRoot).toBe("/runs");
  });
});

test("a postgres location's password (the URL's, else PGPASSWORD) is what its messages scrub; SQLite has none", () => {
  expect(passwordOfLocation({ kind: "postgres", url: "postgres://u:s%40cret@h/db" })).toBe("s@cret");
  expect(passwordOfLocation({ kind: "postgres", url: "postgres://u@h/db?password=p2" })).toBe("p2");
  expect(passwordOfLocation({ kind: "sqlite", path: "/x/state.db" })).toBeUndefined();
});
