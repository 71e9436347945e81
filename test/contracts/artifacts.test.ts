import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { isContained } from "../../src/contracts/containment.ts";
import {
  resolveContract,
  validateContract,
  verifyContract,
  type ArtifactContract,
  type ExpectedArtifact,
} from "../../src/contracts/artifacts.ts";
import { UsageError } from "../../src/util/errors.ts";

let tmp: string;
let root: string;

beforeEach(() => {
  tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "li-artifacts-")));
  root = path.join(tmp, "artifacts");
  fs.mkdirSync(root);
});
afterEach(() => fs.rmSync(tmp, { recursive: true, force: true }));

function entry(id: string, p: string, required = true): ExpectedArtifact {
  return { id, path: p, required, description: "", source: "cli" };
}

function write(relative: string, content = "x"): void {
  const file = path.join(root, relative);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, content);
}

describe("validating a contract", () => {
  test("an absent contract is valid", () => {
    expect(validateContract(null)).toEqual([]);
    expect(validateContract(undefined)).toEqual([]);
  });

  test("a well-formed contract is valid and has no warnings", () => {
    const contract = { expected: [{ id: "report_1", path: "out/report.md", required: false, description: "d", source: "playbook" }] };
    expect(validateContract(contract, root)).toEqual([]);
  });

  const rejected: [string, unknown, RegExp][] = [
    ["a contract that is not a mapping", [], /^artifact contract: must be a mapping/],
    ["a contract without an expected list", { expected: "x" }, /^artifact contract: "expected" must be a list/],
    ["an entry that is not a mapping", { expected: ["x"] }, /^artifact entry 1: must be a mapping/],
    ["an entry without an id", { expected: [{ path: "a" }] }, /^artifact entry 1: id must match/],
    ["an id with a dot", { expected: [{ id: "a.b", path: "a" }] }, /^artifact "a.b": id must match/],
    ["an id with a space", { expected: [{ id: "a b", path: "a" }] }, /^artifact "a b": id must match/],
    ["a duplicate id", { expected: [{ id: "a", path: "x" }, { id: "a", path: "y" }] }, /^artifact "a": id is declared more than once/],
    ["a missing path", { expected: [{ id: "a" }] }, /^artifact "a": path must be a non-empty string \(got nothing\)/],
    ["an empty path", { expected: [{ id: "a", path: "" }] }, /^artifact "a": path must be a non-empty string/],
    ["a path that is not a string", { expected: [{ id: "a", path: 3 }] }, /^artifact "a": path must be a non-empty string \(got number 3\)/],
    ["an absolute path", { expected: [{ id: "a", path: "/etc/passwd" }] }, /^artifact "a": path "\/etc\/passwd" must be relative/],
    ["a path with NUL", { expected: [{ id: "a", path: "a\0b" }] }, /^artifact "a": path .* contains a NUL character/],
    ["a path with *", { expected: [{ id: "a", path: "out/*.md" }] }, /^artifact "a": path "out\/\*.md" contains a glob character/],
    ["a path with ?", { expected: [{ id: "a", path: "a?.md" }] }, /glob character/],
    ["a path with [", { expected: [{ id: "a", path: "a[1].md" }] }, /glob character/],
    ["a path with ]", { expected: [{ id: "a", path: "a].md" }] }, /glob character/],
    ["a path with {", { expected: [{ id: "a", path: "a{b}.md" }] }, /glob character/],
    ["a path with }", { expected: [{ id: "a", path: "a}.md" }] }, /glob character/],
    ["a leading .. segment", { expected: [{ id: "a", path: "../x" }] }, /^artifact "a": path "..\/x" must not contain a ".." segment/],
    ["an inner .. segment", { expected: [{ id: "a", path: "x/../../y" }] }, /".." segment/],
    ["a path that is only ..", { expected: [{ id: "a", path: ".." }] }, /".." segment/],
    ["required that is not a boolean", { expected: [{ id: "a", path: "x", required: "yes" }] }, /^artifact "a": required must be true or false/],
    ["description that is not a string", { expected: [{ id: "a", path: "x", description: 1 }] }, /^artifact "a": description must be a string/],
    ["source that is not a string", { expected: [{ id: "a", path: "x", source: null }] }, /^artifact "a": source must be a string \(got null\)/],
  ];
  for (const [what, contract, message] of rejected) {
    test(`${what} is rejected with one line naming it`, () => {
      let caught: unknown;
      try {
        validateContract(contract);
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(UsageError);
      expect((caught as Error).message).toMatch(message);
      expect((caught as Error).message).not.toContain("\n");
    });
  }

  test("a name that merely starts with two dots is not a .. segment", () => {
    expect(validateContract({ expected: [{ id: "a", path: "..hidden/x" }] }, root)).toEqual([]);
  });

  test("unknown fields are warned about, not rejected", () => {
    expect(validateContract({ expected: [{ id: "a", path: "x", mime: "text/plain" }] })).toEqual(['artifact "a": unknown field "mime" ignored']);
  });

  test("a path whose symlinked directory leaves the root is an escape", () => {
    fs.mkdirSync(path.join(tmp, "outside"));
    fs.symlinkSync(path.join(tmp, "outside"), path.join(root, "link"));
    expect(() => validateContract({ expected: [{ id: "a", path: "link/report.md" }] }, root)).toThrow(
      /^artifact "a": path "link\/report.md" escapes the artifact root/,
    );
  });

  test("a dangling symlink pointing outside the root is an escape", () => {
    fs.symlinkSync(path.join(tmp, "not-yet"), path.join(root, "report.md"));
    expect(() => validateContract({ expected: [{ id: "a", path: "report.md" }] }, root)).toThrow(/escapes the artifact root/);
  });

  test("a symlink that stays inside the root is fine, and so is a root that does not exist yet", () => {
    fs.mkdirSync(path.join(root, "real"));
    fs.symlinkSync(path.join(root, "real"), path.join(root, "alias"));
    expect(validateContract({ expected: [{ id: "a", path: "alias/x.md" }] }, root)).toEqual([]);
    expect(validateContract({ expected: [{ id: "a", path: "deep/x.md" }] }, path.join(tmp, "later", "root"))).toEqual([]);
  });

  test("a symlink loop counts as an escape", () => {
    fs.symlinkSync(path.join(root, "b"), path.join(root, "a"));
    fs.symlinkSync(path.join(root, "a"), path.join(root, "b"));
    expect(isContained(root, path.join(root, "a", "x"))).toBe(false);
  });
});

describe("resolving declarations", () => {
  test("nothing declared anywhere resolves to null", () => {
    expect(resolveContract({})).toBeNull();
    expect(resolveContract({ profile: null, playbook: [], cli: [] })).toBeNull();
  });

  test("defaults are filled in and the source is stamped, unknown fields dropped", () => {
    expect(resolveContract({ profile: [{ id: "a", path: "a.md", extra: 1 }] })).toEqual({
      expected: [{ id: "a", path: "a.md", required: true, description: "", source: "agent_profile" }],
    });
  });

  test("a declared source is replaced by where the entry came from", () => {
    expect(resolveContract({ playbook: [{ id: "a", path: "a.md", source: "made-up" }] })?.expected[0]?.source).toBe("playbook");
  });

  test("a playbook entry replaces the profile entry with the same id and keeps its position", () => {
    const contract = resolveContract({
      profile: [
        { id: "first", path: "p1.md" },
        { id: "second", path: "p2.md", description: "from profile" },
      ],
      playbook: [
        { id: "second", path: "pb2.md", required: false },
        { id: "third", path: "pb3.md" },
      ],
    });
    expect(contract?.expected).toEqual([
      { id: "first", path: "p1.md", required: true, description: "", source: "agent_profile" },
      { id: "second", path: "pb2.md", required: false, description: "", source: "playbook" },
      { id: "third", path: "pb3.md", required: true, description: "", source: "playbook" },
    ]);
  });

  test("--artifact entries win over both the playbook and the profile", () => {
    const contract = resolveContract({
      profile: [{ id: "a", path: "profile.md" }],
      playbook: [{ id: "a", path: "playbook.md" }],
      cli: [{ id: "a", path: "cli.md", required: false }],
    });
    expect(contract?.expected).toEqual([{ id: "a", path: "cli.md", required: false, description: "", source: "cli" }]);
  });

  test("a repeated id within one source collapses to the later entry", () => {
    const contract = resolveContract({ playbook: [{ id: "a", path: "one.md" }, { id: "a", path: "two.md" }] });
    expect(contract?.expected.map((e) => e.path)).toEqual(["two.md"]);
  });

  test("an invalid entry in any source is rejected", () => {
    expect(() => resolveContract({ playbook: [{ id: "a", path: "../x" }] })).toThrow(/^artifact "a": path "..\/x" must not contain/);
    expect(() => resolveContract({ cli: [{ id: "bad id", path: "x" }] })).toThrow(/id must match/);
    expect(() => resolveContract({ profile: "x" as unknown as unknown[] })).toThrow(/\(agent_profile\): "expected" must be a list/);
  });
});

describe("verifying what a leg produced", () => {
  const now = 1_700_000_000.5;

  test("no contract gives null", () => {
    expect(verifyContract(null, root, now)).toBeNull();
    expect(verifyContract(undefined, root, now)).toBeNull();
  });

  test("an empty expected list passes", () => {
    expect(verifyContract({ expected: [] }, root, now)).toEqual({
      status: "passed",
      checked_at: now,
      missing_required: [],
      missing_optional: [],
      produced: [],
    });
  });

  test("non-empty regular files are produced, with their size", () => {
    write("out/report.md", "hello");
    const result = verifyContract({ expected: [entry("report", "out/report.md")] }, root, now);
    expect(result?.status).toBe("passed");
    expect(result?.produced).toEqual([{ id: "report", path: "out/report.md", size: 5, present: true }]);
  });

  test("a zero-byte file is missing", () => {
    write("empty.md", "");
    const result = verifyContract({ expected: [entry("e", "empty.md")] }, root, now);
    expect(result?.status).toBe("failed");
    expect(result?.missing_required).toEqual([entry("e", "empty.md")]);
    expect(result?.produced).toEqual([]);
  });

  test("a directory is missing", () => {
    fs.mkdirSync(path.join(root, "dir"));
    write("dir/inner.md");
    expect(verifyContract({ expected: [entry("d", "dir")] }, root, now)?.status).toBe("failed");
  });

  test("a symlink leaving the root is missing even when its target is a good file", () => {
    fs.writeFileSync(path.join(tmp, "secret.md"), "outside");
    fs.symlinkSync(path.join(tmp, "secret.md"), path.join(root, "report.md"));
    const result = verifyContract({ expected: [entry("r", "report.md")] }, root, now);
    expect(result?.status).toBe("failed");
    expect(result?.produced).toEqual([]);
  });

  test("a symlink to a file inside the root is produced", () => {
    write("real.md", "abc");
    fs.symlinkSync(path.join(root, "real.md"), path.join(root, "alias.md"));
    const result = verifyContract({ expected: [entry("r", "alias.md")] }, root, now);
    expect(result?.status).toBe("passed");
    expect(result?.produced).toEqual([{ id: "r", path: "alias.md", size: 3, present: true }]);
  });

  test("an artifact root reached through a symlink still verifies", () => {
    write("a.md");
    const linkedRoot = path.join(tmp, "linked-root");
    fs.symlinkSync(root, linkedRoot);
    expect(verifyContract({ expected: [entry("a", "a.md")] }, linkedRoot, now)?.status).toBe("passed");
  });

  test("only optional artifacts missing gives a warning", () => {
    write("must.md");
    const result = verifyContract({ expected: [entry("must", "must.md"), entry("nice", "nice.md", false)] }, root, now);
    expect(result?.status).toBe("warning");
    expect(result?.missing_optional.map((e) => e.id)).toEqual(["nice"]);
    expect(result?.missing_required).toEqual([]);
  });

  test("a missing required artifact fails even when optional ones are missing too", () => {
    const result = verifyContract({ expected: [entry("must", "must.md"), entry("nice", "nice.md", false)] }, root, now);
    expect(result?.status).toBe("failed");
    expect(result?.missing_required.map((e) => e.id)).toEqual(["must"]);
    expect(result?.missing_optional.map((e) => e.id)).toEqual(["nice"]);
  });

  test("a missing artifact root marks every entry missing", () => {
    const contract: ArtifactContract = { expected: [entry("a", "a.md"), entry("b", "b.md", false)] };
    const result = verifyContract(contract, path.join(tmp, "nowhere"), now);
    expect(result?.status).toBe("failed");
    expect(result?.missing_required.map((e) => e.id)).toEqual(["a"]);
    expect(result?.missing_optional.map((e) => e.id)).toEqual(["b"]);
  });

  test("an artifact root that is a file marks every entry missing", () => {
    const fileRoot = path.join(tmp, "file-root");
    fs.writeFileSync(fileRoot, "x");
    expect(verifyContract({ expected: [entry("b", "b.md", false)] }, fileRoot, now)?.status).toBe("warning");
    expect(verifyContract({ expected: [entry("b", "b.md", false)] }, null, now)?.status).toBe("warning");
  });

  test("an unsafe path read back from storage is never produced", () => {
    fs.writeFileSync(path.join(tmp, "outside.md"), "x");
    expect(verifyContract({ expected: [entry("o", "../outside.md")] }, root, now)?.status).toBe("failed");
  });

  test("checked_at defaults to the current time in seconds", () => {
    const before = Date.now() / 1000;
    const result = verifyContract({ expected: [] }, root);
    const after = Date.now() / 1000;
    expect(result?.checked_at).toBeGreaterThanOrEqual(before);
    expect(result?.checked_at).toBeLessThanOrEqual(after);
  });
});
