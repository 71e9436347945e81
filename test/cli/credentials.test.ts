// SPEC §18: the credentials li consumed (LI_DB, PGPASSWORD) stay li's. A leg's command and a handler run
// without them unless the user passes one on (--pass-env); the detached supervisor's public argv holds none.

import { describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { li } from "../helpers/cli.ts";
import { ledgerEnvFor } from "../helpers/backends.ts";
import { agentHome } from "../legs/agent-harness.ts";

/** The ledger env of `home` on the suite's backend, with LI_DB always set (a SQLite path, or the URL) and a PGPASSWORD. */
function credentialEnv(home: string): Record<string, string> {
  return { LI_DB: path.join(home, "state.db"), ...ledgerEnvFor(home), PGPASSWORD: "pw-from-env-7f3a" };
}

const names = (text: string) => new Set(text.split("\n").map((line) => line.split("=", 1)[0]));

describe("credentials li consumed are not passed on (§18)", () => {
  // Today: every leg command and every handler inherited LI_DB (with its password) and PGPASSWORD.
  test("the leg's command and its handler see neither LI_DB nor PGPASSWORD; the rest of the environment is theirs", async () => {
    const home = agentHome();
    const handlerEnv = path.join(home.scratch, "handler.env");
    const r = await li(["agent", "--json", "--notify", `sh -c 'env > ${handlerEnv}'`, "--", "/usr/bin/env"], { home: home.home, env: { ...credentialEnv(home.home), KEEP_ME: "yes" } });
    expect(r.code).toBe(0);
    // With --json the command's stdout is on stderr.
    const seen = names(r.stderr);
    expect(seen.has("KEEP_ME")).toBe(true);
    expect(seen.has("LI_SESSION_ID")).toBe(true);
    expect(seen.has("LI_DB")).toBe(false);
    expect(seen.has("PGPASSWORD")).toBe(false);
    expect(r.stderr).not.toContain("pw-from-env-7f3a");
    const handler = fs.readFileSync(handlerEnv, "utf8");
    expect(names(handler).has("LI_STATUS")).toBe(true);
    expect(names(handler).has("LI_DB")).toBe(false);
    expect(handler).not.toContain("pw-from-env-7f3a");
  });

  test("--pass-env NAME lets that one through, and only that one", async () => {
    const home = agentHome();
    const r = await li(["agent", "--json", "--pass-env", "PGPASSWORD", "--", "/usr/bin/env"], { home: home.home, env: credentialEnv(home.home) });
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("PGPASSWORD=pw-from-env-7f3a");
    expect(names(r.stderr).has("LI_DB")).toBe(false);
  });

  test("--pass-env takes a variable's name, never a value: anything else is a usage error, nothing recorded", async () => {
    const home = agentHome();
    const r = await li(["agent", "--pass-env", "PGPASSWORD=x", "--", "true"], { home: home.home });
    expect([r.code, r.stderr]).toEqual([2, `li: --pass-env: expected a variable name such as PGPASSWORD, got "PGPASSWORD=x"\n`]);
    expect(fs.existsSync(home.home)).toBe(false);
  });
});
