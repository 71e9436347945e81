// The completion-evidence gate through `li agent` (§8.3) in real temporary git repositories.

import { describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { li } from "../helpers/cli.ts";
import { sentinelPath } from "../helpers/sentinel.ts";
import { fixture } from "../helpers/fixtures.ts";
import { tempDir } from "../helpers/ledger.ts";
import { agentHome, rows, sessionRow } from "../legs/agent-harness.ts";

/** The evidence that decided the outcome (null: none): without the containment entry every leg's evidence ends with. */
function outcomeEvidence(refs: string | null): Record<string, unknown>[] | null {
  const parsed = JSON.parse(refs ?? "null") as Record<string, unknown>[] | null;
  return parsed === null ? null : parsed.filter((e) => e.kind !== "containment");
}

// The machine's git configuration stays out (system, ~/.gitconfig, $XDG_CONFIG_HOME/git, a CI's GIT_CONFIG_GLOBAL):
// a global commit.gpgsign or init.templateDir would fail or change these commits, for git here and in li's gate.
const GIT_ENV = { GIT_AUTHOR_NAME: "t", GIT_AUTHOR_EMAIL: "t@e", GIT_COMMITTER_NAME: "t", GIT_COMMITTER_EMAIL: "t@e", GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: "/dev/null", HOME: tempDir() };

function git(cwd: string, ...args: string[]): string {
  const r = spawnSync("git", args, { cwd, env: { ...process.env, ...GIT_ENV }, encoding: "utf8" });
  if (r.status !== 0) throw new Error(`git ${args.join(" ")}: ${r.stderr}`);
  return r.stdout;
}

/** A repository on `branch` with one commit. */
function repo(branch = "main"): string {
  const dir = tempDir("li-git-");
  git(dir, "init", "-q", "-b", branch);
  fs.writeFileSync(path.join(dir, "README"), "x\n");
  git(dir, "add", "README");
  git(dir, "commit", "-q", "-m", "base");
  return dir;
}

function commitOn(dir: string, branch: string): void {
  git(dir, "checkout", "-q", "-b", branch);
  fs.writeFileSync(path.join(dir, "work.txt"), "work\n");
  git(dir, "add", "work.txt");
  git(dir, "commit", "-q", "-m", "work");
}

async function gate(args: string[], opts: { cwd?: string } = {}) {
  const home = agentHome();
  const r = await li(["agent", "--json", ...args, "--", fixture("print-nothing")], { home: home.home, env: GIT_ENV, ...(opts.cwd ? { cwd: opts.cwd } : {}) });
  const s = await sessionRow(home.db, JSON.parse(r.stdout).session_id);
  const [last] = await rows<{ metadata: string | null }>(home.db, "SELECT metadata FROM status_transitions WHERE entity_id = ? ORDER BY seq DESC LIMIT 1", s.id);
  // What the gate saw (absent when it did not run): the base it compared with and the commits ahead of it.
  const checked = JSON.parse(last?.metadata ?? "{}").completion_evidence ?? null;
  return { code: r.code, status: s.status as string, reason: s.status_reason_code as string, evidence: outcomeEvidence(s.status_evidence_refs), checked };
}

/** A clone of an upstream repository on `branch`; `remoteHead: false` drops refs/remotes/origin/HEAD. */
function clone(branch: string, remoteHead: boolean): string {
  const upstream = repo(branch);
  const dir = path.join(tempDir("li-clone-"), "work");
  git(path.dirname(dir), "clone", "-q", upstream, "work");
  if (!remoteHead) git(dir, "remote", "set-head", "origin", "-d");
  return dir;
}

describe("with --cwd the gate runs", () => {
  test("a clean tree with no commits ahead and no output is completed_empty, li exits 1", async () => {
    const dir = repo();
    const r = await gate(["--cwd", dir]);
    expect([r.code, r.status, r.reason]).toEqual([1, "completed_empty", "run.completed_empty.no_evidence"]);
    expect(r.evidence).toEqual([{ kind: "completion_evidence", base_ref: "main", commits_ahead: 0, dirty: false, reason: expect.any(String) }]);
  });

  test("the summary line says why a quiet success is completed_empty and how to accept one", async () => {
    const dir = repo();
    const home = agentHome();
    const r = await li(["agent", "--cwd", dir, "--", "true"], { home: home.home, env: GIT_ENV });
    expect(r.code).toBe(1);
    const last = r.stderr.trim().split("\n").at(-1)!;
    expect(last).toStartWith("li: completed_empty (run.completed_empty.no_evidence) session ");
    expect(last).toEndWith(`: no output, no artifact and no change in ${dir}; --no-evidence-gate accepts a quiet success`);
    const accepted = await li(["agent", "--cwd", dir, "--no-evidence-gate", "--", "true"], { home: home.home, env: GIT_ENV });
    expect(accepted.code).toBe(0);
    expect(accepted.stderr.trim().split("\n").at(-1)).toMatch(/^li: completed \(run\.completed\.ok\) session \S+ branch \S+$/);
  });

  test("a dirty tree is evidence", async () => {
    const dir = repo();
    fs.writeFileSync(path.join(dir, "new.txt"), "new\n");
    const r = await gate(["--cwd", dir]);
    expect(r.status).toBe("completed");
    expect(r.checked).toMatchObject({ checked: true, base_ref: "main", commits_ahead: 0, dirty: true });
  });

  for (const base of ["main", "master"]) {
    test(`commits ahead of local ${base} are evidence`, async () => {
      const dir = repo(base);
      commitOn(dir, "feature");
      const r = await gate(["--cwd", dir]);
      expect(r.status).toBe("completed");
      expect(r.checked).toMatchObject({ checked: true, base_ref: base, commits_ahead: 1, dirty: false });
    });
  }

  test("commits ahead of an explicit --base-ref are evidence; none ahead is not", async () => {
    const dir = repo("trunk");
    git(dir, "tag", "v1");
    expect((await gate(["--cwd", dir, "--base-ref", "v1"])).status).toBe("completed_empty");
    commitOn(dir, "feature");
    const r = await gate(["--cwd", dir, "--base-ref", "v1"]);
    expect(r.status).toBe("completed");
    expect(r.checked).toMatchObject({ base_ref: "v1", commits_ahead: 1 });
  });

  test("commits ahead of the remote HEAD are evidence, even when it names a branch outside the fallbacks", async () => {
    const dir = clone("trunk", true);
    expect((await gate(["--cwd", dir])).status).toBe("completed_empty");
    commitOn(dir, "feature");
    const r = await gate(["--cwd", dir]);
    expect(r.status).toBe("completed");
    expect(r.checked).toMatchObject({ base_ref: "origin/trunk", commits_ahead: 1 });
  });

  for (const branch of ["main", "master"]) {
    test(`commits ahead of origin/${branch}, with no remote HEAD, are evidence`, async () => {
      const dir = clone(branch, false);
      expect((await gate(["--cwd", dir])).status).toBe("completed_empty");
      commitOn(dir, "feature");
      const r = await gate(["--cwd", dir]);
      expect(r.status).toBe("completed");
      expect(r.checked).toMatchObject({ base_ref: `origin/${branch}`, commits_ahead: 1 });
    });
  }

  test("a non-git directory is no opinion: completed", async () => {
    const r = await gate(["--cwd", tempDir()]);
    expect([r.code, r.status]).toEqual([0, "completed"]);
    expect(r.checked).toMatchObject({ checked: false, ahead_of_base: null, dirty: null });
  });

  test("a broken repository (the probe fails) is no opinion: completed", async () => {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, ".git"), `gitdir: ${sentinelPath("li-test-gitdir")}\n`);
    const r = await gate(["--cwd", dir]);
    expect([r.code, r.status]).toEqual([0, "completed"]);
    expect(r.checked).toMatchObject({ checked: false });
  });

  test("--no-evidence-gate turns it off", async () => {
    const r = await gate(["--cwd", repo(), "--no-evidence-gate"]);
    expect([r.status, r.checked]).toEqual(["completed", null]);
  });
});

describe("without --cwd", () => {
  test("the gate does not run, even in a clean repository", async () => {
    const dir = repo();
    const r = await gate([], { cwd: dir });
    expect([r.status, r.checked]).toEqual(["completed", null]);
  });

  test("--evidence-gate asks for it in the working directory", async () => {
    const dir = repo();
    expect((await gate(["--evidence-gate"], { cwd: dir })).status).toBe("completed_empty");
  });
});
