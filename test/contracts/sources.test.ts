import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { loadContract, loadPlaybook, loadProfile, parseArtifactFlag, parseArtifactFlags, profilePath } from "../../src/contracts/sources.ts";
import { UsageError } from "../../src/util/errors.ts";

let project: string;

beforeEach(() => {
  project = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "li-sources-")));
});
afterEach(() => fs.rmSync(project, { recursive: true, force: true }));

function writeProfile(name: string, yaml: string): string {
  const file = path.join(project, ".li", "profiles", `${name}.yaml`);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, yaml);
  return file;
}

function writePlaybook(name: string, yaml: string): string {
  const file = path.join(project, name);
  fs.writeFileSync(file, yaml);
  return file;
}

function messageOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(UsageError);
    return (err as Error).message;
  }
  throw new Error("expected a UsageError");
}

describe("parsing --artifact", () => {
  test("ID=PATH is a required artifact", () => {
    expect(parseArtifactFlag("report=out/report.md")).toEqual({ id: "report", path: "out/report.md", required: true });
  });

  test("a trailing ? makes it optional", () => {
    expect(parseArtifactFlag("notes=notes.txt?")).toEqual({ id: "notes", path: "notes.txt", required: false });
  });

  test("the path may hold further = signs", () => {
    expect(parseArtifactFlag("a=x=y.txt")).toEqual({ id: "a", path: "x=y.txt", required: true });
  });

  const malformed: [string, RegExp][] = [
    ["report", /^--artifact "report": expected ID=PATH/],
    ["=out.md", /^--artifact "=out.md": id must match/],
    ["bad id=out.md", /^--artifact "bad id=out.md": id must match/],
    ["a=", /^--artifact "a=": artifact "a": path must be a non-empty string/],
    ["a=?", /^--artifact "a=\?": artifact "a": path must be a non-empty string/],
    ["a=/abs.md", /must be relative/],
    ["a=../up.md", /".." segment/],
    ["a=*.md", /glob character/],
    ["a=x??", /glob character/],
  ];
  for (const [value, message] of malformed) {
    test(`${JSON.stringify(value)} is a usage error naming --artifact and the value`, () => {
      expect(messageOf(() => parseArtifactFlag(value))).toMatch(message);
    });
  }

  test("one id given twice on the command line is a usage error", () => {
    expect(messageOf(() => parseArtifactFlags(["a=x.md", "a=y.md"]))).toMatch(/^--artifact "a=y.md": id "a" is given more than once/);
  });
});

describe("loading a profile", () => {
  test("the profile lives at .li/profiles/NAME.yaml", () => {
    expect(profilePath(project, "coder")).toBe(path.join(project, ".li", "profiles", "coder.yaml"));
  });

  test("artifacts.expected entries are read, other keys ignored", () => {
    const file = writeProfile("coder", "model: big\nartifacts:\n  expected:\n    - id: report\n      path: out/report.md\n      required: false\n");
    expect(loadProfile(project, "coder")).toEqual({
      path: file,
      entries: [{ id: "report", path: "out/report.md", required: false }],
      warnings: [],
    });
  });

  test("a profile without artifacts, or an empty file, declares nothing", () => {
    writeProfile("plain", "model: big\n");
    writeProfile("empty", "");
    expect(loadProfile(project, "plain").entries).toBeUndefined();
    expect(loadProfile(project, "empty").entries).toBeUndefined();
  });

  for (const bad of ["..", ".", "a/b", "../../etc/passwd", ""]) {
    test(`profile name ${JSON.stringify(bad)} is refused naming --profile`, () => {
      expect(messageOf(() => loadProfile(project, bad))).toMatch(/^--profile: /);
    });
  }

  test("a missing profile file is a usage error naming the path", () => {
    expect(messageOf(() => loadProfile(project, "nope"))).toBe(`--profile: ${path.join(project, ".li", "profiles", "nope.yaml")} does not exist`);
  });

  test("invalid YAML is a one-line usage error naming the file", () => {
    const file = writeProfile("broken", "artifacts: [1,\n  b: :");
    const message = messageOf(() => loadProfile(project, "broken"));
    expect(message.startsWith(`${file}: invalid YAML`)).toBe(true);
    expect(message).not.toContain("\n");
  });

  test("a wrongly shaped artifacts key is a usage error naming the file and the key", () => {
    const file = writeProfile("shape", "artifacts:\n  expected: report.md\n");
    expect(messageOf(() => loadProfile(project, "shape"))).toMatch(new RegExp(`^${escape(file)}: artifacts\\.expected: expected array, received string$`));
  });

  test("an entry that is not a mapping is a usage error naming the file and the position", () => {
    const file = writeProfile("scalar", "artifacts:\n  expected:\n    - report.md\n");
    expect(messageOf(() => loadProfile(project, "scalar"))).toMatch(new RegExp(`^${escape(file)}: artifacts\\.expected\\[0\\]: expected record, received string$`));
  });

  test("an invalid entry is a usage error naming the file and the artifact", () => {
    const file = writeProfile("unsafe", "artifacts:\n  expected:\n    - id: r\n      path: /etc/passwd\n");
    expect(messageOf(() => loadProfile(project, "unsafe"))).toBe(`${file}: artifact "r": path "/etc/passwd" must be relative to the artifact root`);
  });

  test("unknown fields are warnings naming the file", () => {
    const file = writeProfile("extra", "artifacts:\n  expected:\n    - id: r\n      path: r.md\n      mime: text/plain\n");
    expect(loadProfile(project, "extra").warnings).toEqual([`${file}: artifact "r": unknown field "mime" ignored`]);
  });
});

describe("loading a playbook", () => {
  test("a relative playbook path resolves against the given directory", () => {
    const file = writePlaybook("play.yaml", "artifacts:\n  expected:\n    - id: a\n      path: a.md\n");
    expect(loadPlaybook("play.yaml", project)).toEqual({ path: file, entries: [{ id: "a", path: "a.md" }], warnings: [] });
  });

  test("a missing playbook is a usage error naming --playbook and the path", () => {
    expect(messageOf(() => loadPlaybook("missing.yaml", project))).toBe(`--playbook: ${path.join(project, "missing.yaml")} does not exist`);
  });

  test("a playbook that is a list is rejected naming the file", () => {
    const file = writePlaybook("list.yaml", "- a\n- b\n");
    expect(messageOf(() => loadPlaybook(file))).toBe(`${file}: expected object, received array`);
  });
});

describe("merging every source", () => {
  test("profile < playbook < --artifact, by id, keeping first positions", () => {
    writeProfile("coder", "artifacts:\n  expected:\n    - id: a\n      path: profile-a.md\n    - id: b\n      path: profile-b.md\n    - id: c\n      path: profile-c.md\n");
    writePlaybook("play.yaml", "artifacts:\n  expected:\n    - id: b\n      path: playbook-b.md\n    - id: c\n      path: playbook-c.md\n");
    const { contract, warnings } = loadContract({
      projectDir: project,
      profile: "coder",
      playbook: "play.yaml",
      cwd: project,
      artifactFlags: ["c=cli-c.md?", "d=cli-d.md"],
    });
    expect(warnings).toEqual([]);
    expect(contract?.expected).toEqual([
      { id: "a", path: "profile-a.md", required: true, description: "", source: "agent_profile" },
      { id: "b", path: "playbook-b.md", required: true, description: "", source: "playbook" },
      { id: "c", path: "cli-c.md", required: false, description: "", source: "cli" },
      { id: "d", path: "cli-d.md", required: true, description: "", source: "cli" },
    ]);
  });

  test("no sources at all give no contract", () => {
    expect(loadContract({ projectDir: project })).toEqual({ contract: null, warnings: [] });
  });

  test("warnings from both files are passed on", () => {
    writeProfile("p", "artifacts:\n  expected:\n    - id: a\n      path: a.md\n      x: 1\n");
    writePlaybook("pb.yaml", "artifacts:\n  expected:\n    - id: b\n      path: b.md\n      y: 2\n");
    const { warnings } = loadContract({ projectDir: project, profile: "p", playbook: "pb.yaml", cwd: project });
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toContain('unknown field "x"');
    expect(warnings[1]).toContain('unknown field "y"');
  });
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
