import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { loadSettings } from "../../src/settings/settings.ts";
import { readTrustStore, revokeTrust, trustCommand, trustFile, trustState } from "../../src/settings/trust.ts";

let root: string;
let liHome: string;
let projectFile: string;

beforeEach(() => {
  root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "li-trust-")));
  liHome = path.join(root, "home");
  projectFile = path.join(root, "repo", ".li", "settings.yaml");
  fs.mkdirSync(path.dirname(projectFile), { recursive: true });
});

afterEach(() => {
  fs.rmSync(root, { recursive: true, force: true });
});

const load = () => loadSettings({ cwd: path.join(root, "repo"), liHome, env: {} });

describe("trusting project settings (§18)", () => {
  test("an untrusted project handler is not used: one warning naming the file and the exact li trust command", () => {
    fs.writeFileSync(projectFile, 'notify.on_terminal: "./evil.sh {status}"\nwatch.sweep_interval: 2h\n');
    const { settings, warnings } = load();
    expect(settings.notifyOnTerminal).toBe(null);
    // watch.sweep_interval neither runs, destroys nor silences anything: it applies from an untrusted file.
    expect(settings.watch.sweepInterval).toBe(7200);
    expect(warnings).toEqual([
      `settings ${projectFile}: notify.on_terminal: not used: this file is not trusted, and the handler would run a program; review the file, then run: li trust ${projectFile}`,
    ]);
  });

  test("trusted and unchanged, the handler is used; changed by a byte, it is untrusted again", () => {
    fs.writeFileSync(projectFile, "notify.on_terminal: ./hook.sh {status}\n");
    const entry = trustFile(liHome, projectFile, 1_800_000_000);
    expect(entry).toEqual({ path: projectFile, sha256: expect.stringMatching(/^[0-9a-f]{64}$/), trusted_at: 1_800_000_000 });
    expect(load()).toMatchObject({ settings: { notifyOnTerminal: { template: "./hook.sh {status}" } }, warnings: [] });
    fs.appendFileSync(projectFile, "# a comment\n");
    const after = load();
    expect(after.settings.notifyOnTerminal).toBe(null);
    expect(after.warnings[0]).toContain("this file changed since it was trusted");
  });

  test("the untrusted project handler does not let the global one run in its place", () => {
    fs.mkdirSync(liHome, { recursive: true });
    fs.writeFileSync(path.join(liHome, "settings.yaml"), "notify.on_terminal: global-hook\n");
    fs.writeFileSync(projectFile, "notify.on_terminal: project-hook\n");
    expect(load().settings.notifyOnTerminal).toBe(null);
    fs.rmSync(projectFile);
    // $LI_HOME/settings.yaml is trusted without li trust.
    expect(load()).toMatchObject({ settings: { notifyOnTerminal: { template: "global-hook" } }, warnings: [] });
  });

  test("the store is owner-only, names the real path, replaces an entry on re-trust, and revokes", () => {
    fs.writeFileSync(projectFile, "notify.on_terminal: a\n");
    const linkedRepo = path.join(root, "linked-repo");
    fs.symlinkSync(path.join(root, "repo"), linkedRepo);
    trustFile(liHome, path.join(linkedRepo, ".li", "settings.yaml"), 1);
    trustFile(liHome, projectFile, 2);
    expect(readTrustStore(liHome)).toEqual([{ path: projectFile, sha256: expect.any(String), trusted_at: 2 }]);
    expect(fs.statSync(path.join(liHome, "trusted")).mode & 0o777).toBe(0o600);
    expect(trustState(liHome, projectFile, "notify.on_terminal: a\n")).toBe("trusted");
    expect(revokeTrust(liHome, projectFile)).toBe(true);
    expect(revokeTrust(liHome, projectFile)).toBe(false);
    expect(trustState(liHome, projectFile, "notify.on_terminal: a\n")).toBe("untrusted");
  });

  test("a file li would not read as settings cannot be trusted either", () => {
    fs.symlinkSync("/etc/hostname", projectFile);
    expect(() => trustFile(liHome, projectFile, 1)).toThrow(`${projectFile} is a symbolic link (not followed)`);
    expect(() => trustFile(liHome, path.join(root, "nope.yaml"), 1)).toThrow("does not exist");
  });

  test("the command to trust a path with spaces or quotes is quoted for a shell", () => {
    expect(trustCommand("/a/b/.li/settings.yaml")).toBe("li trust /a/b/.li/settings.yaml");
    expect(trustCommand("/a/my repo/.li/settings.yaml")).toBe("li trust '/a/my repo/.li/settings.yaml'");
    expect(trustCommand("/a/it's/.li/settings.yaml")).toBe("li trust '/a/it'\\''s/.li/settings.yaml'");
  });

  test("keys that destroy or silence need trust too: a prune age, notices turned off, a timeout shorter than the user's own", () => {
    fs.mkdirSync(liHome, { recursive: true });
    fs.writeFileSync(path.join(liHome, "settings.yaml"), "notify.on_terminal: global-hook\nagent.timeout: 1h\n");
    fs.writeFileSync(projectFile, "watch.prune_keep_days: 0.00001\nnotify:\n  on_terminal: {enabled: false}\nagent.timeout: 1s\n");
    const untrusted = load();
    // Each as if the project had not set it: the user's own values stand.
    expect(untrusted.settings.watch.pruneKeepDays).toBe(null);
    expect(untrusted.settings.notifyOnTerminal?.template).toBe("global-hook");
    expect(untrusted.settings.agentTimeout).toBe(3600);
    expect(untrusted.warnings).toEqual([
      `settings ${projectFile}: notify.on_terminal: not used: this file is not trusted, and it would turn your notices off; review the file, then run: li trust ${projectFile}`,
      `settings ${projectFile}: agent.timeout: not used: this file is not trusted, and it would end legs sooner than your own agent.timeout; review the file, then run: li trust ${projectFile}`,
      `settings ${projectFile}: watch.prune_keep_days: not used: this file is not trusted, and it would prune sessions; review the file, then run: li trust ${projectFile}`,
    ]);
    trustFile(liHome, projectFile, 1);
    const trusted = load();
    expect(trusted.warnings).toEqual([]);
    expect(trusted.settings).toMatchObject({ agentTimeout: 1, watch: { pruneKeepDays: 0.00001 }, notifyOnTerminal: { enabled: false } });
  });

  test("a project timeout no shorter than the user's own needs no trust; without one of the user's, any timeout is shorter", () => {
    fs.mkdirSync(liHome, { recursive: true });
    fs.writeFileSync(projectFile, "agent.timeout: 2h\n");
    expect(load().settings.agentTimeout).toBe(null);
    fs.writeFileSync(path.join(liHome, "settings.yaml"), "agent.timeout: 1h\n");
    expect(load()).toMatchObject({ settings: { agentTimeout: 7200 }, warnings: [] });
  });
});
