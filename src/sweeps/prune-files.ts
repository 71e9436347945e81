// `li state prune --files` (SPEC §12.5): remove pruned legs' run directories, only strictly inside RUNS_ROOT and never one still used or a --save-dir.

import fs from "node:fs";
import path from "node:path";
import { NO_ARTIFACT_ROOT } from "../ledger/rows.ts";
import type { Ledger } from "../ledger/ledger.ts";

export interface FilesReport {
  removed: string[];
  skipped: Array<{ path: string; why: "missing" | "symlink" | "outside_runs_root" | "in_use" | "holds_save_dir" | "no_runs_root" | "error" }>;
}

/** true when `child` is strictly below `parent` (both absolute, normalized). */
export function isStrictlyInside(parent: string, child: string): boolean {
  const rel = path.relative(parent, child);
  return rel !== "" && !rel.startsWith("..") && !path.isAbsolute(rel);
}

/** The real path, or null when it cannot be resolved (gone, a dangling link). */
export function realOrNull(p: string): string | null {
  try {
    return fs.realpathSync(p);
  } catch {
    return null;
  }
}

export async function removeRunDirectories(
  ledger: Ledger,
  legs: ReadonlyArray<{ id: string; state_root: string; artifact_root: string }>,
  runsRoot: string | null,
  opts: { dryRun: boolean },
): Promise<FilesReport> {
  const report: FilesReport = { removed: [], skipped: [] };
  const dirs = [...new Set(legs.map((l) => path.resolve(l.state_root)))];
  const prunedIds = new Set(legs.map((l) => l.id));
  const realRoot = runsRoot ? realOrNull(path.resolve(runsRoot)) : null;
  // An artifact root that is no pruned leg's own state_root/artifacts came from --save-dir: never removed. A resumed
  // or continued leg inherits its session's root, i.e. the first leg's state_root/artifacts: that one is li's own.
  const ownRoots = new Set(legs.map((l) => path.join(path.resolve(l.state_root), "artifacts")));
  // NO_ARTIFACT_ROOT (a run directory that could not be written) names no directory: path.resolve would make it the cwd.
  const saveDirs = legs.filter((l) => l.artifact_root !== NO_ARTIFACT_ROOT).map((l) => path.resolve(l.artifact_root)).filter((root) => !ownRoots.has(root));
  for (const dir of dirs) {
    if (!runsRoot || !realRoot) {
      report.skipped.push({ path: dir, why: "no_runs_root" });
      continue;
    }
    let stat: fs.Stats;
    try {
      stat = fs.lstatSync(dir);
    } catch {
      report.skipped.push({ path: dir, why: "missing" });
      continue;
    }
    if (stat.isSymbolicLink()) {
      report.skipped.push({ path: dir, why: "symlink" });
      continue;
    }
    const real = realOrNull(dir);
    if (!real || !stat.isDirectory() || !isStrictlyInside(path.resolve(runsRoot), dir) || !isStrictlyInside(realRoot, real)) {
      report.skipped.push({ path: dir, why: "outside_runs_root" });
      continue;
    }
    if (saveDirs.some((s) => s === dir || isStrictlyInside(dir, s) || isStrictlyInside(s, dir) || s === real || isStrictlyInside(real, s))) {
      report.skipped.push({ path: dir, why: "holds_save_dir" });
      continue;
    }
    // Read after commit: the pruned legs are gone, so any row left is a survivor using this directory.
    // (In a dry run the pruned legs are still there: they are not survivors.)
    const users = [...(await ledger.backend.legsUsingDirectory(dir)), ...(real === dir ? [] : await ledger.backend.legsUsingDirectory(real))].filter((l) => !prunedIds.has(l.id));
    const ancestorUsers = await surviving(ledger, dir, path.resolve(runsRoot), prunedIds);
    if (users.length > 0 || ancestorUsers) {
      report.skipped.push({ path: dir, why: "in_use" });
      continue;
    }
    if (removeDirectory(dir, opts.dryRun)) report.removed.push(dir);
    else report.skipped.push({ path: dir, why: "error" });
  }
  return report;
}

/**
 * Removes a run directory li decided is its own to remove (true), or only says it would in a dry run;
 * false when the removal failed. rm does not follow symlinks inside the tree: a link goes, its target stays.
 */
export function removeDirectory(dir: string, dryRun: boolean): boolean {
  if (dryRun) return true;
  try {
    fs.rmSync(dir, { recursive: true, force: true });
    return true;
  } catch {
    return false;
  }
}

/** A surviving leg whose state or artifact root is an ancestor of `dir` below RUNS_ROOT (it would lose part of its tree). */
async function surviving(ledger: Ledger, dir: string, root: string, prunedIds: ReadonlySet<string>): Promise<boolean> {
  for (let up = path.dirname(dir); isStrictlyInside(root, up); up = path.dirname(up)) {
    const rows = await ledger.backend.legsUsingDirectory(up);
    if (rows.some((r) => !prunedIds.has(r.id) && (path.resolve(r.state_root) === up || (r.artifact_root !== NO_ARTIFACT_ROOT && path.resolve(r.artifact_root) === up)))) return true;
  }
  return false;
}
