// Run directories a leg allocated but never set up (li killed in between): removed from RUNS_ROOT once old and named by no leg row.

import fs from "node:fs";
import path from "node:path";
import { NO_ARTIFACT_ROOT } from "../ledger/rows.ts";
import { z } from "zod";
import type { Ledger } from "../ledger/ledger.ts";
import { SETUP_PENDING_FILE } from "../legs/rundir.ts";
import { isStrictlyInside, realOrNull, removeDirectory } from "./prune-files.ts";
import { readUntrustedFile } from "../util/untrusted-file.ts";
import { validateWith, type Sweep } from "./sweep.ts";

export interface OrphanRunDirOptions {
  /** Seconds the setup-pending marker must be old: a leg still setting up is never raced. */
  minAgeSeconds: number;
  dryRun: boolean;
}

export interface OrphanRunDirEnv {
  /** RUNS_ROOT; without it nothing is looked at. */
  runsRoot?: string | null;
}

/** Why a directory holding the marker was kept. */
export type OrphanKept = "in_use" | "holds_save_dir" | "outside_runs_root" | "unreadable_marker" | "error";

export interface OrphanRunDirSummary {
  sweep: "orphan_run_dirs";
  dry_run: boolean;
  /** Directories holding the marker (the only ones ever considered). */
  candidates: number;
  /** Removed (in a dry run: would be removed). */
  removed: string[];
  /** Candidates younger than minAgeSeconds: a leg may still be setting up. */
  recent: number;
  kept: Array<{ path: string; why: OrphanKept }>;
}

const schema = z.strictObject({ minAgeSeconds: z.number().nonnegative().finite(), dryRun: z.boolean() });

/**
 * The marker as the allocation wrote it; only its artifact root is used (a --save-dir inside the directory keeps it).
 * A leg's command can write into RUNS_ROOT, so the marker is read as any file someone else could have made (§18):
 * never through a symlink or a FIFO, at most 1 MiB. "unreadable": something li would not read stands there.
 */
function markerArtifactRoot(marker: string): string | null | "unreadable" {
  const read = readUntrustedFile(marker);
  if (!read.ok) return "unreadable";
  try {
    const parsed: unknown = JSON.parse(read.text);
    const root = typeof parsed === "object" && parsed !== null ? (parsed as Record<string, unknown>).artifact_root : undefined;
    return typeof root === "string" && path.isAbsolute(root) ? path.resolve(root) : null;
  } catch {
    return null;
  }
}

/** A leg row's artifact root that is not its own `state_root/artifacts` came from --save-dir. */
const isSaveDir = (leg: { state_root: string; artifact_root: string }) =>
  leg.artifact_root !== NO_ARTIFACT_ROOT && path.resolve(leg.artifact_root) !== path.join(path.resolve(leg.state_root), "artifacts");

/** The one directory entry's verdict; `null`: not a candidate at all (no marker, not a real directory). */
async function judge(ledger: Ledger, root: string, realRoot: string, name: string, now: number, options: OrphanRunDirOptions): Promise<"remove" | "recent" | OrphanKept | null> {
  const dir = path.join(root, name);
  // lstat, never stat: a symlink in RUNS_ROOT is never followed, whatever it points at.
  const stat = fs.lstatSync(dir, { throwIfNoEntry: false });
  if (!stat || stat.isSymbolicLink() || !stat.isDirectory()) return null;
  const marker = path.join(dir, SETUP_PENDING_FILE);
  const markerStat = fs.lstatSync(marker, { throwIfNoEntry: false });
  if (!markerStat || !markerStat.isFile()) return null;
  if (now - markerStat.mtimeMs / 1000 < options.minAgeSeconds) return "recent";
  const real = realOrNull(dir);
  if (!real || !isStrictlyInside(realRoot, real) || path.dirname(real) !== realRoot) return "outside_runs_root";
  const own = markerArtifactRoot(marker);
  // li's own marker is a few hundred bytes: one it will not read was not written by li, so nothing is removed on its word.
  if (own === "unreadable") return "unreadable_marker";
  const inDir = (p: string) => p === dir || p === real || isStrictlyInside(dir, p) || isStrictlyInside(real, p);
  if (own !== null && own !== path.join(dir, "artifacts") && inDir(own)) return "holds_save_dir";
  const users = [...(await ledger.backend.legsUsingDirectory(dir)), ...(real === dir ? [] : await ledger.backend.legsUsingDirectory(real))];
  if (users.some((leg) => isSaveDir(leg) && inDir(path.resolve(leg.artifact_root)))) return "holds_save_dir";
  if (users.length > 0) return "in_use";
  return "remove";
}

export const orphanRunDirs: Sweep<OrphanRunDirOptions, OrphanRunDirSummary> & {
  runOnce(ledger: Ledger, now: number, options: OrphanRunDirOptions, env?: OrphanRunDirEnv): Promise<OrphanRunDirSummary>;
} = {
  name: "orphan_run_dirs",
  defaults: { minAgeSeconds: 3600, dryRun: false },
  validate(input) {
    return validateWith(schema, { ...orphanRunDirs.defaults, ...input }, { minAgeSeconds: "minimum age", dryRun: "--dry-run" });
  },
  /**
   * Looks at the direct children of RUNS_ROOT only (a run directory is always one), and removes one
   * when it is a real directory (not a symlink), holds the allocation's setup-pending marker older
   * than `minAgeSeconds`, and no leg row names it or anything inside it (as its state or artifact
   * root). A directory without the marker, a --save-dir and anything outside RUNS_ROOT are never touched.
   */
  async runOnce(ledger: Ledger, now: number, options: OrphanRunDirOptions, env: OrphanRunDirEnv = {}): Promise<OrphanRunDirSummary> {
    const summary: OrphanRunDirSummary = { sweep: "orphan_run_dirs", dry_run: options.dryRun, candidates: 0, removed: [], recent: 0, kept: [] };
    const root = env.runsRoot ? path.resolve(env.runsRoot) : null;
    const realRoot = root ? realOrNull(root) : null;
    if (!root || !realRoot) return summary;
    let names: string[];
    try {
      names = fs.readdirSync(root);
    } catch {
      return summary;
    }
    for (const name of names.sort()) {
      const dir = path.join(root, name);
      let verdict: Awaited<ReturnType<typeof judge>>;
      try {
        verdict = await judge(ledger, root, realRoot, name, now, options);
      } catch {
        verdict = "error";
      }
      if (verdict === null) continue;
      summary.candidates++;
      if (verdict === "recent") summary.recent++;
      else if (verdict !== "remove") summary.kept.push({ path: dir, why: verdict });
      else if (removeDirectory(dir, options.dryRun)) summary.removed.push(dir);
      else summary.kept.push({ path: dir, why: "error" });
    }
    return summary;
  },
};
