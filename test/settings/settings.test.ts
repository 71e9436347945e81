import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { defaultLegNotify } from "../../src/notify/register.ts";
import { type NotifySetting, notifyAppliesToLeg } from "../../src/notify/on-terminal.ts";
import { loadSettings } from "../../src/settings/settings.ts";
import { trustFile } from "../../src/settings/trust.ts";

let root: string;
let liHome: string;
let project: string;
let globalFile: string;
let projectFile: string;

beforeEach(() => {
  root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "li-settings-")));
  liHome = path.join(root, "home", ".li");
  project = path.join(root, "work", "proj");
  fs.mkdirSync(liHome, { recursive: true });
  fs.mkdirSync(path.join(project, "src", "deep"), { recursive: true });
  globalFile = path.join(liHome, "settings.yaml");
  projectFile = path.join(project, ".li", "settings.yaml");
});

afterEach(() => {
  fs.rmSync(root, { recursive: true, force: true });
});

function write(file: string, text: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
}

function load(cwd = project) {
  return loadSettings({ cwd, liHome, env: {} });
}

const DEFAULTS = {
  notifyOnTerminal: null,
  agentTimeout: null,
  agentLedgerRetry: 120,
  agentStreamReserve: null,
  agentStreamMax: null,
  agentKillGrace: 5,
  agentStopLeftovers: false,
  watch: { sweepInterval: 30, phantomGrace: 60, phantomHours: 1, pruneKeepDays: null, deliveryConcurrency: 16, labels: [], fleetLease: 30, poll: null },
};

describe("loadSettings: files and precedence", () => {
  test("without any file, every key has its default and nothing warns", () => {
    const { settings, warnings } = load();
    expect(settings).toEqual(DEFAULTS);
    expect(warnings).toEqual([]);
  });

  test("the result is frozen all the way down", () => {
    write(globalFile, "notify:\n  on_terminal:\n    argv: [hook, '{id}']\n    filter: {kinds: [session], ids: [abc]}\n");
    const { settings } = load();
    expect(Object.isFrozen(settings)).toBe(true);
    expect(Object.isFrozen(settings.watch)).toBe(true);
    expect(Object.isFrozen(settings.notifyOnTerminal)).toBe(true);
    expect(Object.isFrozen(settings.notifyOnTerminal?.argv)).toBe(true);
    expect(Object.isFrozen(settings.notifyOnTerminal?.filter)).toBe(true);
    expect(Object.isFrozen(settings.notifyOnTerminal?.filter.kinds)).toBe(true);
  });

  test("the global file is read in nested form", () => {
    write(
      globalFile,
      [
        "agent:",
        "  timeout: 2h",
        "  ledger_retry: 0",
        "  stream_reserve: 1.5%",
        "  stream_max: 512M",
        "watch:",
        "  sweep_interval: 10",
        "  phantom_grace: 90s",
        "  phantom_hours: 2",
        "  prune_keep_days: 14",
        "  labels: [gpu, linux]",
        "notify:",
        "  on_terminal: notify-send li '{status}'",
      ].join("\n"),
    );
    const { settings, warnings } = load();
    expect(warnings).toEqual([]);
    expect(settings).toEqual({
      notifyOnTerminal: {
        origin: `settings ${globalFile}: notify.on_terminal`,
        projectDir: path.dirname(liHome),
        enabled: true,
        template: "notify-send li '{status}'",
        filter: { kinds: null, ids: null },
      },
      agentTimeout: 7200,
      agentLedgerRetry: 0,
      agentStreamReserve: { percent: 1.5 },
      agentStreamMax: 512 * 1024 * 1024,
      agentKillGrace: 5,
      agentStopLeftovers: false,
      watch: { sweepInterval: 10, phantomGrace: 90, phantomHours: 2, pruneKeepDays: 14, deliveryConcurrency: 16, labels: ["gpu", "linux"], fleetLease: 30, poll: null },
    });
  });

  test("dotted top-level keys are read too", () => {
    write(globalFile, "agent.timeout: 500ms\nwatch.sweep_interval: 1m\nwatch.prune_keep_days: '0.5'\nwatch.labels: gpu, arm64\n");
    const { settings, warnings } = load();
    expect(warnings).toEqual([]);
    expect(settings.watch.labels).toEqual(["gpu", "arm64"]);
    expect(settings.agentTimeout).toBe(0.5);
    expect(settings.watch.sweepInterval).toBe(60);
    expect(settings.watch.pruneKeepDays).toBe(0.5);
  });

  test("the project file beats the global one key by key", () => {
    write(globalFile, "watch:\n  sweep_interval: 10\n  phantom_hours: 2\nagent:\n  timeout: 1h\n");
    write(projectFile, "watch:\n  sweep_interval: 5m\n");
    const { settings, warnings } = load();
    expect(warnings).toEqual([]);
    expect(settings.watch.sweepInterval).toBe(300);
    expect(settings.watch.phantomHours).toBe(2);
    expect(settings.agentTimeout).toBe(3600);
  });

  test("the nearest project file wins, found by walking up from cwd", () => {
    write(projectFile, "watch:\n  phantom_hours: 3\n");
    write(path.join(project, "src", ".li", "settings.yaml"), "watch:\n  phantom_hours: 5\n");
    expect(load(path.join(project, "src", "deep")).settings.watch.phantomHours).toBe(5);
    expect(load(path.join(project, "src")).settings.watch.phantomHours).toBe(5);
    expect(load(project).settings.watch.phantomHours).toBe(3);
    expect(load(root).settings.watch.phantomHours).toBe(1);
  });

  test("a .li directory without settings.yaml does not stop the walk", () => {
    write(projectFile, "watch:\n  phantom_hours: 3\n");
    fs.mkdirSync(path.join(project, "src", ".li"));
    expect(load(path.join(project, "src", "deep")).settings.watch.phantomHours).toBe(3);
  });

  test("$LI_HOME/settings.yaml is not also taken for a project file when cwd is under the home", () => {
    write(globalFile, "watch:\n  phantom_hours: 3\n  sweep_interval: 1m\n");
    write(path.join(root, ".li", "settings.yaml"), "watch:\n  sweep_interval: 2m\n  phantom_hours: nope\n");
    const { settings, warnings } = load(path.join(root, "home"));
    // ~/.li is skipped as a project, so the next one up is the project and ~/.li stays the global.
    expect(settings.watch.sweepInterval).toBe(120);
    expect(settings.watch.phantomHours).toBe(3);
    expect(warnings).toEqual([
      `settings ${path.join(root, ".li", "settings.yaml")}: watch.phantom_hours: "nope" is not a positive number; using the value from ${globalFile}`,
    ]);
  });

  test("liHome defaults to $LI_HOME from env", () => {
    write(globalFile, "agent:\n  timeout: 42\n");
    expect(loadSettings({ cwd: project, env: { LI_HOME: liHome } }).settings.agentTimeout).toBe(42);
  });

  test("an empty file or an empty value means not set", () => {
    write(globalFile, "watch:\n  sweep_interval: 10\n");
    write(projectFile, "watch:\n  sweep_interval:\nagent:\n");
    const { settings, warnings } = load();
    expect(warnings).toEqual([]);
    expect(settings.watch.sweepInterval).toBe(10);
    write(projectFile, "");
    expect(load()).toEqual({ settings: { ...DEFAULTS, watch: { ...DEFAULTS.watch, sweepInterval: 10 } }, warnings: [] });
  });
});

describe("loadSettings: bad files", () => {
  test("invalid YAML warns naming the file and the file is ignored", () => {
    write(globalFile, "watch:\n  phantom_hours: 4\n");
    write(projectFile, "watch: [unclosed\n");
    const { settings, warnings } = load();
    expect(settings.watch.phantomHours).toBe(4);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toStartWith(`settings ${projectFile}: not valid YAML`);
    expect(warnings[0]).toEndWith("the file is ignored");
  });

  test("a file whose top is not a mapping warns and is ignored", () => {
    write(globalFile, "- a\n- b\n");
    const { settings, warnings } = load();
    expect(settings).toEqual(DEFAULTS);
    expect(warnings).toEqual([`settings ${globalFile}: expected a mapping of keys at the top (one YAML document); the file is ignored`]);
  });

  test("an unreadable settings file warns and is ignored", () => {
    fs.mkdirSync(projectFile, { recursive: true });
    write(globalFile, "agent:\n  timeout: 5\n");
    const { settings, warnings } = load();
    expect(settings.agentTimeout).toBe(5);
    expect(warnings).toEqual([`settings ${projectFile}: is a directory, not a regular file; the file is ignored`]);
  });

  test("a FIFO, a symlink or a file over 1 MiB is refused in one line naming it, and the rest applies (§18)", () => {
    fs.mkdirSync(path.dirname(projectFile), { recursive: true });
    expect(Bun.spawnSync(["mkfifo", projectFile]).exitCode).toBe(0);
    write(globalFile, "agent:\n  timeout: 5\n");
    let loaded = load();
    expect(loaded.settings.agentTimeout).toBe(5);
    expect(loaded.warnings).toEqual([`settings ${projectFile}: is a FIFO, not a regular file; the file is ignored`]);
    fs.rmSync(projectFile);
    fs.symlinkSync("/dev/zero", projectFile);
    loaded = load();
    expect(loaded.warnings).toEqual([`settings ${projectFile}: is a symbolic link (not followed); the file is ignored`]);
    fs.rmSync(projectFile);
    fs.writeFileSync(projectFile, `agent:\n  timeout: 9\n#${"x".repeat(1024 * 1024)}\n`);
    loaded = load();
    expect(loaded.settings.agentTimeout).toBe(5);
    expect(loaded.warnings).toHaveLength(1);
    expect(loaded.warnings[0]).toStartWith(`settings ${projectFile}: is larger than 1 MiB (`);
  });

  test("unknown keys warn, nested, dotted and at the top", () => {
    write(globalFile, "colour: true\nwatch:\n  sweep_intervall: 10\nnotify.on_success: hook\n");
    const { settings, warnings } = load();
    expect(settings).toEqual(DEFAULTS);
    expect(warnings.map((w) => w.split(";")[0])).toEqual([
      `settings ${globalFile}: unknown key colour`,
      `settings ${globalFile}: unknown key watch.sweep_intervall`,
      `settings ${globalFile}: unknown key notify.on_success`,
    ]);
  });

  test("a section that is not a mapping warns", () => {
    write(globalFile, "watch: 5\n");
    const { warnings } = load();
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toStartWith(`settings ${globalFile}: watch: expected a mapping of keys`);
  });

  test("a key given both nested and dotted warns and the dotted one is used", () => {
    write(globalFile, "watch:\n  phantom_hours: 2\nwatch.phantom_hours: 3\n");
    const { settings, warnings } = load();
    expect(settings.watch.phantomHours).toBe(3);
    expect(warnings).toEqual([`settings ${globalFile}: watch.phantom_hours is set twice (nested and dotted); using the dotted one`]);
  });
});

describe("loadSettings: watch.phantom_grace", () => {
  test.each(["0", "'0s'", "'0'"])("%p is accepted as 0", (value) => {
    write(globalFile, `watch:\n  phantom_grace: ${value}\n`);
    const { settings, warnings } = load();
    expect(warnings).toEqual([]);
    expect(settings.watch.phantomGrace).toBe(0);
  });

  test("a negative value's warning says what is allowed: zero or more (0 is, so 'greater than zero' would mislead)", () => {
    write(globalFile, "watch:\n  phantom_grace: -3\n");
    const { settings, warnings } = load();
    expect(settings.watch.phantomGrace).toBe(60);
    expect(warnings).toEqual([`settings ${globalFile}: watch.phantom_grace: expected a duration of zero or more, got -3; using the default`]);
  });
});

describe("loadSettings: invalid values", () => {
  const durationKeys = [
    ["agent.timeout", "agent:\n  timeout: VALUE\n"],
    ["watch.sweep_interval", "watch:\n  sweep_interval: VALUE\n"],
    ["watch.phantom_grace", "watch:\n  phantom_grace: VALUE\n"],
  ] as const;
  const numberKeys = [
    ["watch.phantom_hours", "watch:\n  phantom_hours: VALUE\n"],
    ["watch.prune_keep_days", "watch:\n  prune_keep_days: VALUE\n"],
    ["watch.delivery_concurrency", "watch:\n  delivery_concurrency: VALUE\n"],
  ] as const;

  /** Keys where 0 is a meaningful value (watch.phantom_grace: 0 reaps on positive death alone). */
  const zeroAllowed: ReadonlySet<string> = new Set(["watch.phantom_grace"]);
  for (const [key, yaml] of [...durationKeys, ...numberKeys]) {
    test.each(["0", "-3", "abc", "true", "[1]", "{a: 1}", "'0s'"].filter((v) => !(zeroAllowed.has(key) && (v === "0" || v === "'0s'"))))(`${key}: %p warns naming the key and file, and the default is used`, (value) => {
      write(globalFile, yaml.replace("VALUE", value));
      const { settings, warnings } = load();
      expect(settings).toEqual(DEFAULTS);
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toStartWith(`settings ${globalFile}: ${key}: `);
      expect(warnings[0]).toEndWith("; using the default");
    });
  }

  for (const [key, yaml] of durationKeys) {
    test.each(["366d", "31536001", "'8761h'"])(`${key}: %p is past the 365-day maximum (§18): it warns naming the key, and the default is used`, (value) => {
      write(globalFile, yaml.replace("VALUE", value));
      const { settings, warnings } = load();
      expect(settings).toEqual(DEFAULTS);
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toStartWith(`settings ${globalFile}: ${key}: `);
      expect(warnings[0]).toContain("longer than the maximum of 365d");
      expect(warnings[0]).toEndWith("; using the default");
    });
  }

  test.each([
    ["agent.stream_max", "agent:\n  stream_max: VALUE\n"],
    ["agent.stream_reserve", "agent:\n  stream_reserve: VALUE\n"],
  ])("%s: a size that is not one (12 parsecs, -1, 101%%, a list) warns naming the key and file, and the default is used", (key, yaml) => {
    for (const value of ["12 parsecs", "-1", "[1]", ...(key === "agent.stream_reserve" ? ["101%"] : ["1%"])]) {
      write(globalFile, yaml.replace("VALUE", value));
      const { settings, warnings } = load();
      expect(settings).toEqual(DEFAULTS);
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toStartWith(`settings ${globalFile}: ${key}: `);
      expect(warnings[0]).toEndWith("; using the default");
    }
  });

  test("a size key takes bytes as a YAML number, and K, M, G as text", () => {
    write(globalFile, "agent:\n  stream_max: 1048576\n  stream_reserve: 64K\n");
    expect(load().settings).toMatchObject({ agentStreamMax: 1048576, agentStreamReserve: { bytes: 65536 } });
    write(globalFile, "agent:\n  stream_max: 2G\n  stream_reserve: 0\n");
    expect(load().settings).toMatchObject({ agentStreamMax: 2 * 1024 ** 3, agentStreamReserve: { bytes: 0 } });
  });

  test("a duration key accepts 365 days, as text or as a YAML number", () => {
    write(globalFile, "agent:\n  timeout: 365d\nwatch:\n  sweep_interval: 31536000\n");
    const { settings, warnings } = load();
    expect(warnings).toEqual([]);
    expect(settings.agentTimeout).toBe(31_536_000);
    expect(settings.watch.sweepInterval).toBe(31_536_000);
  });

  test("a duration key accepts a unit and a positive-number key does not", () => {
    write(globalFile, "watch:\n  phantom_grace: 2m\n  phantom_hours: 2h\n");
    const { settings, warnings } = load();
    expect(settings.watch.phantomGrace).toBe(120);
    expect(settings.watch.phantomHours).toBe(1);
    expect(warnings).toEqual([`settings ${globalFile}: watch.phantom_hours: "2h" is not a positive number; using the default`]);
  });

  test("an invalid project value falls back to the global value and says so", () => {
    write(globalFile, "watch:\n  phantom_hours: 6\n");
    write(projectFile, "watch:\n  phantom_hours: 0\n");
    const { settings, warnings } = load();
    expect(settings.watch.phantomHours).toBe(6);
    expect(warnings).toEqual([
      `settings ${projectFile}: watch.phantom_hours: expected a positive number greater than zero, got 0; using the value from ${globalFile}`,
    ]);
  });

  test("invalid values in both files each warn", () => {
    write(globalFile, "agent:\n  timeout: soon\n");
    write(projectFile, "agent:\n  timeout: later\n");
    const { settings, warnings } = load();
    expect(settings.agentTimeout).toBe(null);
    expect(warnings).toEqual([
      `settings ${projectFile}: agent.timeout: "later" is not a duration (seconds, or a number with ms, s, m, h, d (90, 1.5, 500ms, 10m, 2h, 7d)); using the default`,
      `settings ${globalFile}: agent.timeout: "soon" is not a duration (seconds, or a number with ms, s, m, h, d (90, 1.5, 500ms, 10m, 2h, 7d)); using the default`,
    ]);
  });
});

describe("loadSettings: notify.on_terminal", () => {
  function notifyFrom(yaml: string) {
    write(globalFile, yaml);
    return load();
  }
  const origin = () => `settings ${globalFile}: notify.on_terminal`;

  test("a template string keeps shell syntax that is quoted", () => {
    const { settings, warnings } = notifyFrom(`notify:\n  on_terminal: "hook '{id} | done; $(x) > y' \\"a && b\\""\n`);
    expect(warnings).toEqual([]);
    expect(settings.notifyOnTerminal?.template).toBe(`hook '{id} | done; $(x) > y' "a && b"`);
  });

  test.each(["hook | tee", "hook; rm", "hook && x", "hook > out", "hook $HOME", "hook `id`", "hook &", "(hook)"])(
    "a template with unquoted shell syntax (%p) warns and leaves no handler",
    (template) => {
      const { settings, warnings } = notifyFrom(`notify.on_terminal: ${JSON.stringify(template)}\n`);
      expect(settings.notifyOnTerminal).toBe(null);
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toStartWith(`${origin()}: unquoted `);
      expect(warnings[0]).toEndWith("; the callback is disabled");
    },
  );

  test.each([
    ["an unknown placeholder", "notify.on_terminal: 'hook {nope}'\n", "unknown placeholder {nope}"],
    ["an unterminated quote", "notify.on_terminal: \"hook 'x\"\n", "unterminated single quote"],
    ["an empty template", "notify.on_terminal: '  '\n", "the template is empty"],
    ["a number", "notify.on_terminal: 5\n", "expected a template string or a mapping"],
    ["a list", "notify.on_terminal: [hook]\n", "expected a template string or a mapping"],
    ["an unknown mapping key", "notify.on_terminal: {argvs: [hook]}\n", "argvs"],
    ["argv that is not a list", "notify.on_terminal: {argv: hook}\n", "argv: "],
    ["argv with a non-string word", "notify.on_terminal: {argv: [hook, [x]]}\n", "argv.1: "],
    ["an empty argv", "notify.on_terminal: {argv: []}\n", "the argv is empty"],
    ["an argv with an unknown placeholder", "notify.on_terminal: {argv: [hook, '{stat}']}\n", "unknown placeholder {stat} in word 2"],
    ["enabled without argv", "notify.on_terminal: {enabled: true}\n", "argv is required"],
    ["enabled that is not a boolean", "notify.on_terminal: {enabled: 'yes', argv: [hook]}\n", "enabled: "],
    ["an unknown filter key", "notify.on_terminal: {argv: [hook], filter: {kind: [session]}}\n", "kind"],
    ["an unknown kind", "notify.on_terminal: {argv: [hook], filter: {kinds: [session, show]}}\n", 'filter.kinds: "show" is not one of'],
    ["an invalid id", "notify.on_terminal: {argv: [hook], filter: {ids: ['../x']}}\n", 'filter.ids: "../x" is not a valid id'],
  ])("%s warns naming notify.on_terminal and the file, and leaves no handler", (_what, yaml, problem) => {
    const { settings, warnings } = notifyFrom(yaml);
    expect(settings.notifyOnTerminal).toBe(null);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toStartWith(`${origin()}: `);
    expect(warnings[0]).toContain(problem);
    expect(warnings[0]).toEndWith("; the callback is disabled");
  });

  test("the mapping form keeps its words literally, with filter defaults", () => {
    const { settings, warnings } = notifyFrom("notify:\n  on_terminal:\n    argv: [hook, 'a | b', '{status}']\n");
    expect(warnings).toEqual([]);
    expect(settings.notifyOnTerminal).toEqual({
      origin: origin(),
      projectDir: expect.any(String),
      enabled: true,
      argv: ["hook", "a | b", "{status}"],
      filter: { kinds: null, ids: null },
    });
  });

  test("the mapping form reads enabled and the filter, normalizing kind aliases", () => {
    const { settings, warnings } = notifyFrom(
      "notify:\n  on_terminal:\n    enabled: false\n    argv: [hook]\n    filter:\n      kinds: [session, schedule_runs, play, invocation, session]\n      ids: [abc-1]\n",
    );
    expect(warnings).toEqual([]);
    expect(settings.notifyOnTerminal?.enabled).toBe(false);
    expect(settings.notifyOnTerminal?.filter).toEqual({ kinds: ["session", "schedule_run", "play", "invocation"], ids: ["abc-1"] });
  });

  test("a trusted project can switch the global handler off with enabled: false alone", () => {
    write(globalFile, "notify.on_terminal: hook {id}\n");
    write(projectFile, "notify:\n  on_terminal:\n    enabled: false\n");
    trustFile(liHome, projectFile, 1);
    const { settings, warnings } = load();
    expect(warnings).toEqual([]);
    expect(settings.notifyOnTerminal).toEqual({ origin: `settings ${projectFile}: notify.on_terminal`, projectDir: project, enabled: false, filter: { kinds: null, ids: null } });
  });

  test("the project handler beats the global one, once the project file is trusted", () => {
    write(globalFile, "notify.on_terminal: global-hook\n");
    write(projectFile, "notify.on_terminal: project-hook\n");
    trustFile(liHome, projectFile, 1);
    expect(load().settings.notifyOnTerminal?.template).toBe("project-hook");
  });

  test("an invalid project handler disables the callback rather than running the global one", () => {
    write(globalFile, "notify.on_terminal: global-hook\n");
    write(projectFile, "notify.on_terminal: project-hook | tee\n");
    const { settings, warnings } = load();
    expect(settings.notifyOnTerminal).toBe(null);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toStartWith(`settings ${projectFile}: notify.on_terminal: unquoted '|'`);
  });

  test("a warning never carries a long secret argument in full", () => {
    const secret = "tok_0123456789abcdefSECRET";
    const { warnings } = notifyFrom(`notify.on_terminal: "curl -H 'X-Token: ${secret}' {oops}"\n`);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).not.toContain(secret);
    expect(warnings[0]).not.toContain("SECRET");
  });
});

describe("notifyAppliesToLeg", () => {
  const base: NotifySetting = { origin: "x", enabled: true, template: "hook", filter: { kinds: null, ids: null } };
  const leg = { sessionId: "sess-1", branchId: "br-1" };
  const withFilter = (kinds: string[] | null, ids: string[] | null): NotifySetting => ({ ...base, filter: { kinds, ids } });

  test("an enabled handler without a filter applies to every leg", () => {
    expect(notifyAppliesToLeg(base, leg)).toBe(true);
  });

  test("no handler, or a disabled one, applies to no leg", () => {
    expect(notifyAppliesToLeg(null, leg)).toBe(false);
    expect(notifyAppliesToLeg({ ...base, enabled: false }, leg)).toBe(false);
  });

  test("kinds that leave out session give legs no registration", () => {
    expect(notifyAppliesToLeg(withFilter(["invocation", "play"], null), leg)).toBe(false);
    expect(notifyAppliesToLeg(withFilter([], null), leg)).toBe(false);
    expect(notifyAppliesToLeg(withFilter(["play", "session"], null), leg)).toBe(true);
  });

  test("ids match the session id or the branch id", () => {
    expect(notifyAppliesToLeg(withFilter(null, ["sess-1"]), leg)).toBe(true);
    expect(notifyAppliesToLeg(withFilter(null, ["br-1"]), leg)).toBe(true);
    expect(notifyAppliesToLeg(withFilter(["session"], ["other", "br-1"]), leg)).toBe(true);
    expect(notifyAppliesToLeg(withFilter(null, ["other"]), leg)).toBe(false);
    expect(notifyAppliesToLeg(withFilter(null, ["sess"]), leg)).toBe(false);
  });
});

describe("loadSettings: notify.on_terminal shapes and shell features (§9.2, §15)", () => {
  // Every feature that needs a shell, each with a template that uses it unquoted.
  const SHELL_FEATURES: ReadonlyArray<readonly [string, string]> = [
    ["|", "a | b"],
    ["||", "a || b"],
    ["&&", "a && b"],
    [";", "a; b"],
    ["&", "a &"],
    ["<", "a < in"],
    [">", "a > out"],
    ["$", "echo $HOME"],
    ["$(", "echo $(id)"],
    ["`", "echo `id`"],
  ];

  /** Writes the global file with `on_terminal` set to `value` (a YAML scalar or flow mapping). */
  function withValue(value: string) {
    write(globalFile, `notify.on_terminal: ${value}\n`);
    return load();
  }
  const origin = () => `settings ${globalFile}: notify.on_terminal`;
  const legArgv = (settings: ReturnType<typeof load>["settings"]) => defaultLegNotify(settings, { notifyFlag: null, sessionId: "s-1", branchId: "b-1" }).argv;

  for (const [token, template] of SHELL_FEATURES) {
    test(`unquoted ${JSON.stringify(token)} in the template string warns naming the key and the feature, and leaves no handler`, () => {
      const { settings, warnings } = withValue(JSON.stringify(`hook ${template}`));
      expect(settings.notifyOnTerminal).toBe(null);
      expect(legArgv(settings)).toBe(null);
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toStartWith(`${origin()}: unquoted '${token}'`);
      expect(warnings[0]).toEndWith("; the callback is disabled");
    });

    for (const [quote, q] of [
      ["single", "'"],
      ["double", '"'],
    ] as const) {
      test(`${JSON.stringify(token)} inside ${quote} quotes is one literal word of the leg's argv`, () => {
        const { settings, warnings } = withValue(JSON.stringify(`hook ${q}${template}${q} {status}`));
        expect(warnings).toEqual([]);
        expect(legArgv(settings)).toEqual(["hook", template, "{status}"]);
      });
    }

    test(`${JSON.stringify(token)} in a word of the mapping form's argv is literal`, () => {
      const { settings, warnings } = withValue(`{argv: [hook, ${JSON.stringify(template)}]}`);
      expect(warnings).toEqual([]);
      expect(legArgv(settings)).toEqual(["hook", template]);
    });
  }

  test.each([
    ["a boolean", "true", "expected a template string or a mapping"],
    ["an empty mapping (enabled by default, so argv is needed)", "{}", "argv is required"],
    ["a filter that is a list", "{argv: [hook], filter: [session]}", "filter: "],
    ["filter.kinds that is a string", "{argv: [hook], filter: {kinds: session}}", "filter.kinds: "],
    ["filter.ids holding a number", "{argv: [hook], filter: {ids: [1]}}", "filter.ids.0: "],
    ["an empty word as the command", "{argv: ['', x]}", "empty"],
  ])("%s is invalid: a warning naming the key, and no handler", (_what, value, problem) => {
    const { settings, warnings } = withValue(value);
    expect(settings.notifyOnTerminal).toBe(null);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toStartWith(`${origin()}: `);
    expect(warnings[0]).toContain(problem);
  });

  test.each([
    ["enabled: false alone", "{enabled: false}", null],
    ["an empty filter", "{argv: [hook, '{id}'], filter: {}}", ["hook", "{id}"]],
    ["kinds that name session", "{argv: [hook], filter: {kinds: [sessions]}}", ["hook"]],
    ["kinds that leave out session", "{argv: [hook], filter: {kinds: [invocation]}}", null],
    ["an empty kinds list", "{argv: [hook], filter: {kinds: []}}", null],
    ["ids naming the branch", "{argv: [hook], filter: {ids: [b-1]}}", ["hook"]],
    ["ids naming neither the session nor the branch", "{argv: [hook], filter: {ids: [other]}}", null],
    ["a template with every placeholder", JSON.stringify("hook {status} {previous_status} {reason} {id} {kind} {event_id} {exit_code} {artifact_dir} {branch_id} {session_id} {run_id}"), ["hook", "{status}", "{previous_status}", "{reason}", "{id}", "{kind}", "{event_id}", "{exit_code}", "{artifact_dir}", "{branch_id}", "{session_id}", "{run_id}"]],
  ])("%s is valid, without warnings; the leg's argv follows from it", (_what, value, argv) => {
    const { settings, warnings } = withValue(value);
    expect(warnings).toEqual([]);
    expect(settings.notifyOnTerminal).not.toBe(null);
    expect(legArgv(settings)).toEqual(argv as string[] | null);
  });

  test("a section `notify` that is not a mapping warns naming it", () => {
    write(globalFile, "notify: hook\n");
    const { settings, warnings } = load();
    expect(settings.notifyOnTerminal).toBe(null);
    expect(warnings).toEqual([`settings ${globalFile}: notify: expected a mapping of keys (such as notify.on_terminal)`]);
  });
});

// chown to an uid with no account: only root may, so these run as root (CI does) and say so otherwise.
const asRoot = process.getuid?.() === 0;
if (!asRoot) console.warn("skipped \"settings of another user\": not root, so the files cannot be given to another uid");
const OTHER_UID = 54_321;

describe.if(asRoot)("settings of another user (§18 other users)", () => {
  test("a .li of another owner is skipped with one warning, and the walk goes on to the user's own file above", () => {
    write(path.join(project, ".li", "settings.yaml"), "watch:\n  phantom_hours: 2\n");
    const planted = path.join(project, "src", ".li", "settings.yaml");
    write(planted, "watch:\n  phantom_hours: 9\n");
    fs.chownSync(path.dirname(planted), OTHER_UID, OTHER_UID);
    const { settings, warnings } = load(path.join(project, "src", "deep"));
    expect(settings.watch.phantomHours).toBe(2);
    expect(warnings).toEqual([expect.stringMatching(new RegExp(`^settings ${planted}: not read: the settings directory ${path.dirname(planted)} is another user's \\(owned by uid ${OTHER_UID}, mode 0755\\)`))]);
  });

  test("a .li of the user's own that others may write is skipped too", () => {
    write(projectFile, "agent:\n  ledger_retry: 5s\n");
    fs.chmodSync(path.dirname(projectFile), 0o777);
    const { settings, warnings } = load();
    expect(settings.agentLedgerRetry).toBe(120);
    expect(warnings).toEqual([expect.stringContaining(`settings ${projectFile}: not read: the settings directory ${path.dirname(projectFile)} is writable by group or others`)]);
  });

  test("a settings file of another owner is not read, in the project or in LI_HOME", () => {
    write(projectFile, "agent:\n  ledger_retry: 5s\n");
    fs.chownSync(projectFile, OTHER_UID, OTHER_UID);
    write(globalFile, "watch:\n  phantom_hours: 4\n");
    fs.chmodSync(globalFile, 0o666);
    const { settings, warnings } = load();
    expect(settings).toEqual(DEFAULTS);
    expect(warnings).toEqual([
      expect.stringContaining(`settings ${projectFile}: not read: the settings file ${projectFile} is another user's (owned by uid ${OTHER_UID}, mode 0644)`),
      expect.stringContaining(`settings ${globalFile}: not read: the settings file ${globalFile} is writable by group or others`),
    ]);
  });

  test("the walk stops at a directory of another owner: nothing in or above it is read", () => {
    write(projectFile, "watch:\n  phantom_hours: 2\n");
    const theirs = path.join(project, "src");
    write(path.join(theirs, ".li", "settings.yaml"), "watch:\n  phantom_hours: 9\n");
    fs.chownSync(theirs, OTHER_UID, OTHER_UID);
    const { settings, warnings } = load(path.join(theirs, "deep"));
    expect(settings.watch.phantomHours).toBe(1);
    expect(warnings).toEqual([expect.stringContaining(`not read: ${theirs} belongs to uid ${OTHER_UID}, and li does not look for settings in or above another user's directory`)]);
  });
});
