// `li state migrate [--check]` end to end (§13, §16), on the suite's backend: the owner's explicit step,
// and the check a deploy script or a DBA runs before an upgrade.

import { describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { onPostgres } from "../helpers/backends.ts";
import { li } from "../helpers/cli.ts";
import { agentHome, type AgentHome } from "../legs/agent-harness.ts";

async function setVersion(home: AgentHome, version: number): Promise<void> {
  if (onPostgres) await home.db.run("UPDATE __li_version SET version = ? WHERE id = 1", version);
  else await home.db.run(`PRAGMA user_version = ${version}`);
}

async function version(home: AgentHome): Promise<number> {
  const out = await li(["state", "migrate", "--check", "--json"], { home: home.home });
  return JSON.parse(out.stdout).version;
}

describe("li state migrate", () => {
  test("--check on a home with no ledger exits 1 and creates nothing", async () => {
    const home = agentHome();
    const r = await li(["state", "migrate", "--check"], { home: home.home });
    expect(r.code).toBe(1);
    expect(r.stdout).toContain("not created yet; li state migrate creates it");
    expect(r.stderr).toBe("");
    expect(await home.db.exists()).toBe(false);
    if (!onPostgres) expect(existsSync(home.home)).toBe(false);
    const json = await li(["state", "migrate", "--check", "--json"], { home: home.home });
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toMatchObject({ state: "absent", version: null });
    expect(await home.db.exists()).toBe(false);
  });

  test("creates the ledger, after which --check exits 0 and a read-only command finds it", async () => {
    const home = agentHome();
    const r = await li(["state", "migrate"], { home: home.home });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/: created at schema \d+ \(\d+ migrations? applied\)\n$/);
    expect(await home.db.exists()).toBe(true);
    const check = await li(["state", "migrate", "--check", "--json"], { home: home.home });
    expect(check.code).toBe(0);
    const state = JSON.parse(check.stdout);
    expect(state).toMatchObject({ state: "current", pending: [] });
    expect(state.version).toBe(state.known);
    expect((await li(["state", "migrate", "--check"], { home: home.home })).stdout).toContain(`current (schema ${state.known})`);
    expect((await li(["ls", "--json"], { home: home.home })).code).toBe(0);
    const again = await li(["state", "migrate"], { home: home.home });
    expect([again.code, again.stdout.includes("already current")]).toEqual([0, true]);
  });

  test("--check names the pending migrations of an older ledger, exits 1, and changes nothing", async () => {
    const home = agentHome();
    expect((await li(["state", "migrate"], { home: home.home })).code).toBe(0);
    const known = await version(home);
    await setVersion(home, known - 1);
    const r = await li(["state", "migrate", "--check", "--json"], { home: home.home });
    expect(r.code).toBe(1);
    const state = JSON.parse(r.stdout);
    expect(state).toMatchObject({ state: "pending", version: known - 1, known });
    expect(state.pending).toHaveLength(1);
    expect(await version(home)).toBe(known - 1);
  });

  test("a ledger written by a newer li: --check and migrate exit 78 naming it, and change nothing", async () => {
    const home = agentHome();
    expect((await li(["state", "migrate"], { home: home.home })).code).toBe(0);
    const known = await version(home);
    await setVersion(home, known + 1);
    for (const args of [["state", "migrate", "--check"], ["state", "migrate"]]) {
      const r = await li(args, { home: home.home });
      expect(r.code).toBe(78);
      expect(r.stderr).toContain(`written by a newer li (schema ${known + 1}, this li knows ${known})`);
      expect(r.stderr.trim().split("\n")).toHaveLength(1);
    }
    await setVersion(home, known);
    expect(await version(home)).toBe(known);
  });
});
