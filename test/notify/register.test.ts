import { describe, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { defaultLegNotify, registerLegCallback } from "../../src/notify/register.ts";
import { loadSettings } from "../../src/settings/settings.ts";
import { trustFile } from "../../src/settings/trust.ts";
import { tempDir } from "../helpers/ledger.ts";
import { notifyWorld } from "./helpers.ts";

function settingsWith(files: { project?: string; global?: string }) {
  const root = tempDir();
  const home = join(root, "home");
  const project = join(root, "project");
  mkdirSync(join(project, ".li"), { recursive: true });
  mkdirSync(home, { recursive: true });
  if (files.project !== undefined) {
    writeFileSync(join(project, ".li", "settings.yaml"), files.project);
    // A project handler runs only from a trusted file (§18); the trust rule has its own tests.
    trustFile(home, join(project, ".li", "settings.yaml"), 1);
  }
  if (files.global !== undefined) writeFileSync(join(home, "settings.yaml"), files.global);
  return loadSettings({ cwd: project, liHome: home, env: {} }).settings;
}

const leg = { sessionId: "s1", branchId: "b1" };

describe("which argv a leg registers", () => {
  test("--notify beats project settings, which beat global settings, which beat none", () => {
    const both = settingsWith({ project: "notify:\n  on_terminal: project-notify {status}\n", global: "notify:\n  on_terminal: global-notify\n" });
    expect(defaultLegNotify(both, { ...leg, notifyFlag: "flag-notify --id {id}" })).toEqual({ argv: ["flag-notify", "--id", "{id}"], origin: "--notify", warnings: [] });
    expect(defaultLegNotify(both, { ...leg, notifyFlag: undefined }).argv).toEqual(["project-notify", "{status}"]);
    const globalOnly = settingsWith({ global: "notify:\n  on_terminal:\n    argv: [global-notify, '{run_id}']\n" });
    expect(defaultLegNotify(globalOnly, { ...leg, notifyFlag: undefined }).argv).toEqual(["global-notify", "{run_id}"]);
    expect(defaultLegNotify(settingsWith({}), { ...leg, notifyFlag: undefined })).toEqual({ argv: null, origin: null, warnings: [] });
  });

  test("a bad --notify is a warning naming the flag, never a throw, and disables the notice", () => {
    const settings = settingsWith({ global: "notify:\n  on_terminal: global-notify\n" });
    for (const bad of ["notify | tee log", "", "notify {nope}", "notify 'unterminated"]) {
      const resolved = defaultLegNotify(settings, { ...leg, notifyFlag: bad });
      expect(resolved.argv).toBeNull();
      expect(resolved.warnings).toHaveLength(1);
      expect(resolved.warnings[0]).toStartWith("--notify: ");
    }
    const secret = defaultLegNotify(settings, { ...leg, notifyFlag: "notify --token=supersecretvalue123 {bogus}" });
    expect(secret.warnings[0]).not.toContain("supersecretvalue123");
  });

  test("a settings filter that leaves out sessions, or names other ids, gives no default registration", () => {
    const noSessions = settingsWith({ global: "notify:\n  on_terminal:\n    argv: [n]\n    filter: {kinds: [invocation]}\n" });
    expect(defaultLegNotify(noSessions, { ...leg, notifyFlag: undefined }).argv).toBeNull();
    const byBranch = settingsWith({ global: "notify:\n  on_terminal:\n    argv: [n]\n    filter: {ids: [b1]}\n" });
    expect(defaultLegNotify(byBranch, { ...leg, notifyFlag: undefined }).argv).toEqual(["n"]);
    expect(defaultLegNotify(byBranch, { sessionId: "s2", branchId: "b2", notifyFlag: undefined }).argv).toBeNull();
    const disabled = settingsWith({ global: "notify:\n  on_terminal:\n    enabled: false\n" });
    expect(defaultLegNotify(disabled, { ...leg, notifyFlag: undefined }).argv).toBeNull();
  });
});

describe("registerLegCallback", () => {
  test("writes the registration and its consumer at the highest committed seq, in the caller's transaction", async () => {
    const w = notifyWorld();
    const { ledger } = w;
    await ledger.createEntity("session", { id: "s1" });
    const registered = await ledger.transact((tx) => registerLegCallback(tx, { id: "r1", sessionId: "s1", legId: "leg-1", argv: ["n", "{status}"], origin: "--notify", hostId: "h", now: 5 }));
    expect(registered).toEqual({ id: "r1", consumer: "cb:r1" });
    expect(await w.sql("SELECT scope, consumer, session_id, leg_id, argv, host_id, enabled FROM terminal_callbacks")).toEqual([
      { scope: "leg", consumer: "cb:r1", session_id: "s1", leg_id: "leg-1", argv: '["n","{status}"]', host_id: "h", enabled: 1 },
    ]);
    expect(await w.sql("SELECT name, watermark FROM consumers")).toEqual([{ name: "cb:r1", watermark: 1 }]);

    // Rolled back with the setup transaction that failed.
    await expect(
      ledger.transact(async (tx) => {
        await registerLegCallback(tx, { id: "r2", sessionId: "s1", legId: "leg-2", argv: ["n"], origin: "--notify", hostId: "h", now: 6 });
        throw new Error("setup failed");
      }),
    ).rejects.toThrow("setup failed");
    expect(await w.sql("SELECT COUNT(*) AS n FROM terminal_callbacks")).toEqual([{ n: 1 }]);
  });
});
