// Completion evidence from git (SPEC §8.3, ADR-0064 D4): commits ahead of a base or a dirty tree; any doubt is "no opinion".

import fs from "node:fs";

/** The seed's contract; field names are kept as stored in transition evidence. */
export interface CompletionEvidence {
  /** false = "no opinion": not a work tree, a missing directory, or a failed or timed-out probe. */
  checked: boolean;
  ahead_of_base: boolean | null;
  commits_ahead: number | null;
  dirty: boolean | null;
  base_ref: string | null;
  reason: string;
}

export interface EvidenceOptions {
  /** `--base-ref`: tried first, skipped when it does not resolve to a commit. */
  baseRef?: string | null;
  /** Per git probe; a probe past it is killed and the check gives no opinion. */
  timeoutMs?: number;
  /** The git executable (a test seam). */
  git?: string;
}

export const DEFAULT_PROBE_TIMEOUT_MS = 5000;

/** Bases tried after the explicit ref and the remote HEAD, in the seed's order. */
export const FALLBACK_BASES: readonly string[] = ["origin/main", "origin/master", "main", "master"];

/** Variables that would point git at another repository than the one in `cwd`. */
const REPOSITORY_OVERRIDES = [
  "GIT_DIR",
  "GIT_WORK_TREE",
  "GIT_INDEX_FILE",
  "GIT_OBJECT_DIRECTORY",
  "GIT_ALTERNATE_OBJECT_DIRECTORIES",
  "GIT_COMMON_DIR",
  "GIT_NAMESPACE",
];

interface ProbeOutcome {
  /** Exit code, or null when the probe could not run or was killed at the deadline. */
  code: number | null;
  stdout: string;
  failure: string | null;
}

/** A probe that could not give an answer: the whole check has no opinion. */
class ProbeFailed extends Error {}

function gitEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && !REPOSITORY_OVERRIDES.includes(key)) env[key] = value;
  }
  env.GIT_TERMINAL_PROMPT = "0";
  // The command may still be using the repository: status must not take index.lock.
  env.GIT_OPTIONAL_LOCKS = "0";
  env.LC_ALL = "C";
  return env;
}

async function runGit(git: string, cwd: string, args: string[], timeoutMs: number, env: Record<string, string>): Promise<ProbeOutcome> {
  const label = `git ${args.join(" ")}`;
  let child;
  try {
    child = Bun.spawn([git, ...args], { cwd, env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  } catch (error) {
    return { code: null, stdout: "", failure: `${label} could not start: ${error instanceof Error ? error.message : String(error)}` };
  }
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<"timeout">((resolve) => {
    timer = setTimeout(() => resolve("timeout"), timeoutMs);
  });
  // Reading the pipes is raced too: a helper git leaves behind could keep them open.
  const work = Promise.all([child.exited, new Response(child.stdout).text(), new Response(child.stderr).text()]);
  try {
    const result = await Promise.race([work, deadline]);
    if (result === "timeout") {
      child.kill("SIGKILL");
      return { code: null, stdout: "", failure: `${label} timed out after ${timeoutMs} ms` };
    }
    const [code, stdout, stderr] = result;
    const firstLine = stderr.trim().split("\n")[0] ?? "";
    return { code, stdout, failure: code === 0 ? null : `${label} exited ${code}${firstLine ? `: ${firstLine}` : ""}` };
  } finally {
    clearTimeout(timer);
  }
}

function noOpinion(reason: string): CompletionEvidence {
  return { checked: false, ahead_of_base: null, commits_ahead: null, dirty: null, base_ref: null, reason };
}

/**
 * Checks a workspace for signs that work was done. Never throws: a check that cannot be made
 * comes back with `checked: false`, which must never demote a completion.
 */
export async function checkCompletionEvidence(cwd: string | null | undefined, options: EvidenceOptions = {}): Promise<CompletionEvidence> {
  if (!cwd) return noOpinion("no working directory to check");
  const timeoutMs = options.timeoutMs ?? DEFAULT_PROBE_TIMEOUT_MS;
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) return noOpinion(`invalid probe timeout ${timeoutMs}`);
  try {
    if (!fs.statSync(cwd).isDirectory()) return noOpinion(`${cwd} is not a directory`);
  } catch {
    return noOpinion(`${cwd} does not exist`);
  }

  const git = options.git ?? "git";
  const env = gitEnv();
  const probe = async (args: string[]): Promise<ProbeOutcome> => {
    const outcome = await runGit(git, cwd, args, timeoutMs, env);
    if (outcome.code === null) throw new ProbeFailed(outcome.failure ?? "git probe failed");
    return outcome;
  };
  /** 0 = yes, 1 = no (the --quiet answer for "no such ref"); anything else is a failed probe. */
  const answers = async (args: string[]): Promise<ProbeOutcome | null> => {
    const outcome = await probe(args);
    if (outcome.code === 0) return outcome;
    if (outcome.code === 1) return null;
    throw new ProbeFailed(outcome.failure ?? "git probe failed");
  };
  const resolves = async (ref: string): Promise<boolean> => !ref.startsWith("-") && (await answers(["rev-parse", "--verify", "--quiet", `${ref}^{commit}`])) !== null;

  try {
    const inside = await probe(["rev-parse", "--is-inside-work-tree"]);
    if (inside.code !== 0 || inside.stdout.trim() !== "true") {
      return noOpinion(`${cwd} is not a git work tree${inside.failure ? ` (${inside.failure})` : ""}`);
    }

    const status = await probe(["status", "--porcelain", "--untracked-files=normal"]);
    if (status.code !== 0) throw new ProbeFailed(status.failure ?? "git status failed");
    const dirty = status.stdout.trim().length > 0;

    let baseRef: string | null = null;
    const notes: string[] = [];
    if (options.baseRef) {
      if (await resolves(options.baseRef)) baseRef = options.baseRef;
      else notes.push(`base ref ${options.baseRef} does not resolve`);
    }
    if (baseRef === null) {
      const remoteHead = await answers(["symbolic-ref", "--quiet", "--short", "refs/remotes/origin/HEAD"]);
      const name = remoteHead?.stdout.trim();
      if (name && (await resolves(name))) baseRef = name;
    }
    for (const candidate of FALLBACK_BASES) {
      if (baseRef !== null) break;
      if (await resolves(candidate)) baseRef = candidate;
    }

    let commitsAhead: number | null = null;
    if (baseRef !== null) {
      const count = await probe(["rev-list", "--count", `${baseRef}..HEAD`]);
      const n = Number(count.stdout.trim());
      if (count.code !== 0 || !Number.isSafeInteger(n) || n < 0) throw new ProbeFailed(count.failure ?? `git rev-list printed ${JSON.stringify(count.stdout)}`);
      commitsAhead = n;
    }

    const parts = [
      baseRef === null ? "no base ref resolved" : `${commitsAhead} commit${commitsAhead === 1 ? "" : "s"} ahead of ${baseRef}`,
      dirty ? "working tree dirty" : "working tree clean",
      ...notes,
    ];
    return {
      checked: true,
      ahead_of_base: commitsAhead === null ? null : commitsAhead > 0,
      commits_ahead: commitsAhead,
      dirty,
      base_ref: baseRef,
      reason: parts.join("; "),
    };
  } catch (error) {
    if (error instanceof ProbeFailed) return noOpinion(error.message);
    return noOpinion(`git probe failed: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** true = work was done, false = checked and none found, null = no opinion (never demote). */
export function hasEvidence(evidence: CompletionEvidence): boolean | null {
  if (!evidence.checked) return null;
  return evidence.ahead_of_base === true || evidence.dirty === true;
}
