import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { allocateRun, findBranchSnapshot, generateRunId, openRun, takeRunId } from "../../src/legs/rundir.ts";
import { UsageError } from "../../src/util/errors.ts";

let tmp: string;
let runsRoot: string;

beforeEach(() => {
  tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "li-rundir-")));
  runsRoot = path.join(tmp, "runs");
});
afterEach(() => fs.rmSync(tmp, { recursive: true, force: true }));

const fixedNow = Date.UTC(2024, 4, 1, 12, 34, 56) / 1000;

describe("choosing the run id", () => {
  test("an explicit run id wins over LI_RUN_ID, which is still consumed", () => {
    const env: Record<string, string | undefined> = { LI_RUN_ID: "from-env", OTHER: "kept" };
    const run = allocateRun({ runsRoot, runId: takeRunId("explicit-1", env) });
    expect(run.runId).toBe("explicit-1");
    expect(env).toEqual({ OTHER: "kept" });
  });

  test("LI_RUN_ID is used when no run id is given and removed from the env the command sees", () => {
    const env: Record<string, string | undefined> = { LI_RUN_ID: "nested-run" };
    const run = allocateRun({ runsRoot, runId: takeRunId(undefined, env) });
    expect(run.runId).toBe("nested-run");
    expect("LI_RUN_ID" in env).toBe(false);
  });

  test("without either, the id is the UTC time and 6 hex characters of a uuid", () => {
    const run = allocateRun({ runsRoot, now: fixedNow, randomHex: () => "abcdef0123" });
    expect(run.runId).toBe("20240501T123456-abcdef");
  });

  test("the default random suffix matches the documented format", () => {
    expect(allocateRun({ runsRoot }).runId).toMatch(/^\d{8}T\d{6}-[0-9a-f]{6}$/);
    expect(generateRunId(fixedNow)).toMatch(/^20240501T123456-[0-9a-f]{6}$/);
  });

  test("an empty LI_RUN_ID counts as unset", () => {
    const env: Record<string, string | undefined> = { LI_RUN_ID: "" };
    expect(allocateRun({ runsRoot, runId: takeRunId(undefined, env), now: fixedNow, randomHex: () => "123456" }).runId).toBe("20240501T123456-123456");
    expect("LI_RUN_ID" in env).toBe(false);
  });

  for (const bad of ["..", ".", "a/b", "", "-x", "a b", "../escape"]) {
    test(`--run-id ${JSON.stringify(bad)} is refused naming the flag, creating nothing`, () => {
      expect(() => allocateRun({ runsRoot, runId: takeRunId(bad, {}) })).toThrow(UsageError);
      expect(() => allocateRun({ runsRoot, runId: takeRunId(bad, {}) })).toThrow(/^--run-id: /);
      expect(fs.existsSync(runsRoot)).toBe(false);
    });
  }

  test("an unsafe LI_RUN_ID is refused naming the variable", () => {
    expect(() => allocateRun({ runsRoot, runId: takeRunId(undefined, { LI_RUN_ID: "../x" }) })).toThrow(/^LI_RUN_ID: "..\/x" is not a valid id/);
  });

  test("reusing a run id whose directory exists is a usage error naming the id", () => {
    allocateRun({ runsRoot, runId: "once" });
    expect(() => allocateRun({ runsRoot, runId: "once" })).toThrow(/run id once is already used/);
  });
});

describe("the directories of a run", () => {
  test("state lives under RUNS_ROOT/<run_id> with branches and stream created owner-only, but no artifact root", () => {
    const run = allocateRun({ runsRoot, runId: "r1" });
    expect(run.stateRoot).toBe(path.join(runsRoot, "r1"));
    expect(run.artifactRoot).toBe(path.join(runsRoot, "r1", "artifacts"));
    for (const dir of [run.stateRoot, run.branchesDir, run.streamDir]) {
      expect(fs.statSync(dir).isDirectory()).toBe(true);
      expect(fs.statSync(dir).mode & 0o077).toBe(0);
    }
    expect(fs.existsSync(run.artifactRoot)).toBe(false);
  });

  test("ensureArtifactRoot creates the artifact root on demand", () => {
    const run = allocateRun({ runsRoot, runId: "r1" });
    expect(run.ensureArtifactRoot()).toBe(run.artifactRoot);
    expect(fs.statSync(run.artifactRoot).isDirectory()).toBe(true);
  });

  test("a save dir becomes the resolved artifact root and is not created", () => {
    const run = allocateRun({ runsRoot, runId: "r1", saveDir: path.join(tmp, "out", "..", "saved") });
    expect(run.artifactRoot).toBe(path.join(tmp, "saved"));
    expect(fs.existsSync(run.artifactRoot)).toBe(false);
  });

  test("a save dir starting with ~ is expanded against the home directory", () => {
    const run = allocateRun({ runsRoot, runId: "r1", saveDir: "~/reports", homeDir: tmp });
    expect(run.artifactRoot).toBe(path.join(tmp, "reports"));
  });

  test("a relative save dir resolves against the working directory", () => {
    const run = allocateRun({ runsRoot, runId: "r1", saveDir: "rel/dir" });
    expect(run.artifactRoot).toBe(path.resolve("rel/dir"));
  });

  test("the accessors name the documented files", () => {
    const run = allocateRun({ runsRoot, runId: "r1" });
    expect(run.manifestPath).toBe(path.join(run.stateRoot, "run.json"));
    expect(run.checkpointPath).toBe(path.join(run.stateRoot, "checkpoint.json"));
    expect(run.branchPath("b-1")).toBe(path.join(run.stateRoot, "branches", "b-1.json"));
    expect(run.streamPath("b-1")).toBe(path.join(run.stateRoot, "stream", "b-1.log"));
    expect(run.agentArtifactDir("coder")).toBe(path.join(run.artifactRoot, "coder"));
  });

  test("a run dir is frozen", () => {
    const run = allocateRun({ runsRoot, runId: "r1" });
    expect(Object.isFrozen(run)).toBe(true);
  });

  test("branch and stream paths refuse unsafe branch ids", () => {
    const run = allocateRun({ runsRoot, runId: "r1" });
    expect(() => run.branchPath("../x")).toThrow(/^branch id: /);
    expect(() => run.streamPath("a/b")).toThrow(/^branch id: /);
  });

  for (const bad of ["..", ".", "a/b", "../other", ""]) {
    test(`agentArtifactDir(${JSON.stringify(bad)}) throws`, () => {
      const run = allocateRun({ runsRoot, runId: "r1" });
      expect(() => run.agentArtifactDir(bad)).toThrow(UsageError);
    });
  }

  test("agentArtifactDir throws when the agent's folder is a symlink leaving the artifact root", () => {
    const run = allocateRun({ runsRoot, runId: "r1" });
    run.ensureArtifactRoot();
    fs.mkdirSync(path.join(tmp, "elsewhere"));
    fs.symlinkSync(path.join(tmp, "elsewhere"), path.join(run.artifactRoot, "sneaky"));
    expect(() => run.agentArtifactDir("sneaky")).toThrow(/escapes the artifact root/);
  });
});

describe("the manifest", () => {
  test("reading a manifest that was never written gives {}", () => {
    expect(allocateRun({ runsRoot, runId: "r1" }).readManifest()).toEqual({});
  });

  test("a written manifest reads back with the run's identity and the caller's fields, owner-only", () => {
    const run = allocateRun({ runsRoot, runId: "r1", saveDir: path.join(tmp, "save") });
    run.writeManifest({ session_id: "s-1", command: ["echo", "hi"] });
    expect(run.readManifest()).toEqual({
      run_id: "r1",
      state_root: run.stateRoot,
      artifact_root: path.join(tmp, "save"),
      session_id: "s-1",
      command: ["echo", "hi"],
    });
    expect(fs.statSync(run.manifestPath).mode & 0o777).toBe(0o600);
    expect(fs.readdirSync(run.stateRoot).filter((name) => name.endsWith(".tmp"))).toEqual([]);
  });

  test("caller fields cannot override the run's identity", () => {
    const run = allocateRun({ runsRoot, runId: "r1" });
    run.writeManifest({ run_id: "lie", state_root: "/nowhere" });
    expect(run.readManifest()).toMatchObject({ run_id: "r1", state_root: run.stateRoot });
  });

  test("rewriting the manifest replaces it whole", () => {
    const run = allocateRun({ runsRoot, runId: "r1" });
    run.writeManifest({ a: 1 });
    run.writeManifest({ b: 2 });
    expect(run.readManifest()).toEqual({ run_id: "r1", state_root: run.stateRoot, artifact_root: run.artifactRoot, b: 2 });
  });

  test("a corrupt manifest is an error, not {}", () => {
    const run = allocateRun({ runsRoot, runId: "r1" });
    fs.writeFileSync(run.manifestPath, "{not json");
    expect(() => run.readManifest()).toThrow(SyntaxError);
  });
});

describe("reopening a run", () => {
  test("openRun rebuilds the same paths for an existing leg without creating anything", () => {
    const allocated = allocateRun({ runsRoot, runId: "r1" });
    allocated.writeManifest({ x: 1 });
    const reopened = openRun({ runId: "r1", stateRoot: allocated.stateRoot, artifactRoot: allocated.artifactRoot });
    expect(reopened.manifestPath).toBe(allocated.manifestPath);
    expect(reopened.readManifest()).toMatchObject({ x: 1 });
    expect(fs.existsSync(reopened.artifactRoot)).toBe(false);
  });

  test("openRun refuses an unsafe run id", () => {
    expect(() => openRun({ runId: "..", stateRoot: tmp, artifactRoot: tmp })).toThrow(UsageError);
  });
});

describe("finding a branch snapshot in the run directories", () => {
  function snapshot(runId: string, branchId: string, body: unknown, mtimeSeconds?: number): string {
    const dir = path.join(runsRoot, runId, "branches");
    fs.mkdirSync(dir, { recursive: true });
    const file = path.join(dir, `${branchId}.json`);
    fs.writeFileSync(file, typeof body === "string" ? body : JSON.stringify(body));
    if (mtimeSeconds !== undefined) fs.utimesSync(file, mtimeSeconds, mtimeSeconds);
    return file;
  }

  test("an exact id is found", () => {
    const file = snapshot("r1", "abcd1234-0000", { n: 1 });
    expect(findBranchSnapshot(runsRoot, "abcd1234-0000")).toEqual({ branchId: "abcd1234-0000", path: file, snapshot: { n: 1 } });
  });

  test("an exact id beats a longer id it is a prefix of", () => {
    snapshot("r1", "abc", { n: "exact" });
    snapshot("r2", "abcdef", { n: "longer" });
    expect(findBranchSnapshot(runsRoot, "abc")?.snapshot).toEqual({ n: "exact" });
  });

  test("a unique prefix is found", () => {
    snapshot("r1", "abcd1234", { n: 1 });
    snapshot("r1", "ffff0000", { n: 2 });
    expect(findBranchSnapshot(runsRoot, "abcd")?.branchId).toBe("abcd1234");
  });

  test("an ambiguous prefix is a usage error listing the candidates", () => {
    snapshot("r1", "abcd1111", {});
    snapshot("r2", "abcd2222", {});
    expect(() => findBranchSnapshot(runsRoot, "abcd")).toThrow(/ambiguous: abcd1111, abcd2222/);
  });

  test("the same branch snapshotted by several legs is not ambiguous: the newest wins", () => {
    snapshot("r1", "abcd1111", { leg: 1 }, 1_000_000);
    snapshot("r2", "abcd1111", { leg: 2 }, 2_000_000);
    expect(findBranchSnapshot(runsRoot, "abcd")?.snapshot).toEqual({ leg: 2 });
  });

  test("a corrupt newest snapshot falls back to an older leg's copy", () => {
    snapshot("r1", "b1", { leg: 1 }, 1_000_000);
    snapshot("r2", "b1", "{torn", 2_000_000);
    expect(findBranchSnapshot(runsRoot, "b1")?.snapshot).toEqual({ leg: 1 });
  });

  test("nothing matching, or no runs root at all, gives null", () => {
    expect(findBranchSnapshot(runsRoot, "zzz")).toBeNull();
    snapshot("r1", "abc", {});
    expect(findBranchSnapshot(runsRoot, "zzz")).toBeNull();
    expect(findBranchSnapshot(runsRoot, "")).toBeNull();
  });
});
