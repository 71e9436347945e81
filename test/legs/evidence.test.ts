import { describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { checkCompletionEvidence, hasEvidence, type CompletionEvidence } from "../../src/legs/evidence.ts";
import { tempDir as scratchDir } from "../helpers/temp-dirs.ts";
import { isAlive, until, visiblePids } from "../helpers/until.ts";

const GIT_ENV = {
  ...process.env,
  GIT_AUTHOR_NAME: "Test",
  GIT_AUTHOR_EMAIL: "test@example.invalid",
  GIT_COMMITTER_NAME: "Test",
  GIT_COMMITTER_EMAIL: "test@example.invalid",
  GIT_CONFIG_NOSYSTEM: "1",
  // The repositories the tests make do not depend on the machine's ~/.gitconfig (commit.gpgsign, hooks…).
  GIT_CONFIG_GLOBAL: "/dev/null",
};

const tempDir = (): string => scratchDir("li-evidence-");

function git(cwd: string, ...args: string[]): string {
  const run = Bun.spawnSync(["git", ...args], { cwd, env: GIT_ENV, stdin: "ignore" });
  if (run.exitCode !== 0) throw new Error(`git ${args.join(" ")} failed in ${cwd}: ${run.stderr.toString()}`);
  return run.stdout.toString().trim();
}

let commitCounter = 0;
function commit(cwd: string, message = "change"): void {
  commitCounter += 1;
  fs.writeFileSync(path.join(cwd, `file-${commitCounter}.txt`), `${message} ${commitCounter}\n`);
  git(cwd, "add", "-A");
  git(cwd, "commit", "-q", "-m", `${message} ${commitCounter}`);
}

/** A repository on `branch` with one commit. */
function repo(branch = "main"): string {
  const dir = tempDir();
  git(dir, "init", "-q", "-b", branch);
  commit(dir, "initial");
  return dir;
}

/** A clone of an upstream whose default branch is `branch`; origin/HEAD is set by the clone. */
function cloned(branch = "main"): string {
  const upstream = repo(branch);
  const dir = path.join(tempDir(), "clone");
  git(path.dirname(dir), "clone", "-q", upstream, dir);
  return dir;
}

/** The live processes whose working directory is `dir` (processes of other users, which /proc hides, are skipped). */
function processesWorkingIn(dir: string): number[] {
  const real = fs.realpathSync(dir);
  return visiblePids().filter((pid) => {
    try {
      return fs.readlinkSync(`/proc/${pid}/cwd`) === real && isAlive(pid);
    } catch {
      return false; // gone meanwhile, a zombie, or not ours to look at
    }
  });
}

function expectNoOpinion(evidence: CompletionEvidence): void {
  expect(evidence.checked).toBe(false);
  expect(evidence.ahead_of_base).toBeNull();
  expect(evidence.commits_ahead).toBeNull();
  expect(evidence.dirty).toBeNull();
  expect(hasEvidence(evidence)).toBeNull();
}

describe("commits ahead of a base", () => {
  test("an explicit base ref is used first when it resolves", async () => {
    const dir = repo();
    git(dir, "tag", "start");
    commit(dir);
    commit(dir);
    const evidence = await checkCompletionEvidence(dir, { baseRef: "start" });
    expect(evidence).toMatchObject({ checked: true, base_ref: "start", commits_ahead: 2, ahead_of_base: true, dirty: false });
    expect(hasEvidence(evidence)).toBe(true);
  });

  test("an explicit base ref that does not resolve falls back to the usual bases and says so", async () => {
    const dir = repo();
    git(dir, "checkout", "-q", "-b", "feature");
    commit(dir);
    const evidence = await checkCompletionEvidence(dir, { baseRef: "no-such-ref" });
    expect(evidence).toMatchObject({ checked: true, base_ref: "main", commits_ahead: 1 });
    expect(evidence.reason).toContain("no-such-ref");
  });

  test("a base ref that looks like an option is never handed to git as one", async () => {
    const dir = repo();
    git(dir, "checkout", "-q", "-b", "feature");
    commit(dir);
    const evidence = await checkCompletionEvidence(dir, { baseRef: "--all" });
    expect(evidence).toMatchObject({ checked: true, base_ref: "main", commits_ahead: 1 });
  });

  test("the remote HEAD comes before origin/main and main", async () => {
    const dir = cloned("trunk");
    commit(dir);
    const evidence = await checkCompletionEvidence(dir);
    expect(evidence).toMatchObject({ checked: true, base_ref: "origin/trunk", commits_ahead: 1, ahead_of_base: true });
  });

  test("origin/main is used when there is no remote HEAD, before the local main", async () => {
    const dir = cloned("main");
    git(dir, "remote", "set-head", "origin", "-d");
    commit(dir);
    commit(dir);
    const evidence = await checkCompletionEvidence(dir);
    expect(evidence).toMatchObject({ checked: true, base_ref: "origin/main", commits_ahead: 2 });
  });

  test("the local main is the base when working on another branch", async () => {
    const dir = repo("main");
    git(dir, "checkout", "-q", "-b", "feature");
    commit(dir);
    commit(dir);
    commit(dir);
    const evidence = await checkCompletionEvidence(dir);
    expect(evidence).toMatchObject({ checked: true, base_ref: "main", commits_ahead: 3, ahead_of_base: true, dirty: false });
  });

  test("master is the last base tried", async () => {
    const dir = repo("master");
    git(dir, "checkout", "-q", "-b", "feature");
    commit(dir);
    const evidence = await checkCompletionEvidence(dir);
    expect(evidence).toMatchObject({ checked: true, base_ref: "master", commits_ahead: 1 });
  });

  test("with no base at all, ahead is unknown but a dirty tree still counts", async () => {
    const dir = tempDir();
    git(dir, "init", "-q", "-b", "work");
    fs.writeFileSync(path.join(dir, "new.txt"), "x\n");
    const evidence = await checkCompletionEvidence(dir);
    expect(evidence).toMatchObject({ checked: true, base_ref: null, commits_ahead: null, ahead_of_base: null, dirty: true });
    expect(hasEvidence(evidence)).toBe(true);
  });
});

describe("the working tree", () => {
  test("an untracked file makes the tree dirty", async () => {
    const dir = repo();
    fs.writeFileSync(path.join(dir, "untracked.txt"), "x\n");
    const evidence = await checkCompletionEvidence(dir);
    expect(evidence).toMatchObject({ checked: true, dirty: true, commits_ahead: 0, ahead_of_base: false });
    expect(hasEvidence(evidence)).toBe(true);
  });

  test("a modified tracked file makes the tree dirty", async () => {
    const dir = repo();
    const [first] = fs.readdirSync(dir).filter((name) => name.startsWith("file-"));
    fs.appendFileSync(path.join(dir, first ?? "missing"), "more\n");
    expect((await checkCompletionEvidence(dir)).dirty).toBe(true);
  });

  test("a clean tree at its base is checked and shows no evidence", async () => {
    const dir = repo();
    const evidence = await checkCompletionEvidence(dir);
    expect(evidence).toEqual({
      checked: true,
      ahead_of_base: false,
      commits_ahead: 0,
      dirty: false,
      base_ref: "main",
      reason: "0 commits ahead of main; working tree clean",
    });
    expect(hasEvidence(evidence)).toBe(false);
  });

  test("a subdirectory of a work tree is checked as that work tree", async () => {
    const dir = repo();
    fs.mkdirSync(path.join(dir, "sub"));
    fs.writeFileSync(path.join(dir, "sub", "new.txt"), "x\n");
    expect(await checkCompletionEvidence(path.join(dir, "sub"))).toMatchObject({ checked: true, dirty: true });
  });

  test("GIT_DIR in the environment does not point the check at another repository", async () => {
    const dirty = repo();
    fs.writeFileSync(path.join(dirty, "untracked.txt"), "x\n");
    const clean = repo();
    const saved = process.env.GIT_DIR;
    process.env.GIT_DIR = path.join(dirty, ".git");
    try {
      expect(await checkCompletionEvidence(clean)).toMatchObject({ checked: true, dirty: false });
    } finally {
      if (saved === undefined) delete process.env.GIT_DIR;
      else process.env.GIT_DIR = saved;
    }
  });
});

describe("no opinion", () => {
  test("a directory that is not a git work tree gives no opinion", async () => {
    const evidence = await checkCompletionEvidence(tempDir());
    expectNoOpinion(evidence);
    expect(evidence.reason).toContain("not a git work tree");
  });

  test("a missing directory gives no opinion", async () => {
    const missing = path.join(tempDir(), "gone");
    const evidence = await checkCompletionEvidence(missing);
    expectNoOpinion(evidence);
    expect(evidence.reason).toContain(missing);
  });

  test("no working directory at all gives no opinion", async () => {
    expectNoOpinion(await checkCompletionEvidence(null));
  });

  test("a repository with a corrupt HEAD gives no opinion", async () => {
    const dir = repo();
    fs.writeFileSync(path.join(dir, "untracked.txt"), "x\n");
    fs.writeFileSync(path.join(dir, ".git", "HEAD"), "garbage\n");
    expectNoOpinion(await checkCompletionEvidence(dir));
  });

  test("a repository whose objects are gone gives no opinion", async () => {
    const dir = repo();
    git(dir, "checkout", "-q", "-b", "feature");
    commit(dir);
    fs.rmSync(path.join(dir, ".git", "objects"), { recursive: true, force: true });
    fs.mkdirSync(path.join(dir, ".git", "objects"));
    expectNoOpinion(await checkCompletionEvidence(dir));
  });

  test("a git that hangs is killed at the timeout and gives no opinion", async () => {
    const dir = repo();
    const hanging = path.join(tempDir(), "git");
    // It hangs from its first line and announces nothing: a pid file it wrote was missing whenever the
    // timeout came before the shell got that far (a loaded machine), though the kill had worked.
    fs.writeFileSync(hanging, "#!/bin/sh\nexec sleep 30\n", { mode: 0o755 });
    const evidence = await checkCompletionEvidence(dir, { git: hanging, timeoutMs: 1000 });
    expectNoOpinion(evidence);
    expect(evidence.reason).toContain("timed out");
    // Each probe runs in the repository: one left running is a live process working there (for 30 s).
    await until("the hanging git to be killed", () => processesWorkingIn(dir).length === 0);
  });

  test("a git that cannot be started gives no opinion", async () => {
    const evidence = await checkCompletionEvidence(repo(), { git: path.join(tempDir(), "no-git-here") });
    expectNoOpinion(evidence);
  });
});
