// Run directories (SPEC §6, ADR-0064 D1): where one leg's snapshots, streams, manifest and default artifacts live.

import fs from "node:fs";
import path from "node:path";
import { isContained } from "../contracts/containment.ts";
import { UsageError } from "../util/errors.ts";
import { assertSafeId, isSafeId } from "../util/ids.ts";
import { writeFileAtomic } from "../util/atomic-file.ts";
import { readUntrustedFile } from "../util/untrusted-file.ts";
import { resolveSaveDir, RUN_ID_ENV } from "./rundir-names.ts";

export { resolveSaveDir, RUN_ID_ENV } from "./rundir-names.ts";
/** State directories hold the command's output and identity: owner-only, like LI_HOME (§3). */
const STATE_DIR_MODE = 0o700;
const MANIFEST_MODE = 0o600;

/**
 * Written by the allocation, removed once the leg's setup is done (committed, or the leg runs
 * unrecorded): a run directory that still holds it after an hour, and that no leg row names, was left
 * by a li killed in between, and the orphan sweep removes it (src/sweeps/orphan-run-dirs.ts).
 */
export const SETUP_PENDING_FILE = "setup-pending.json";

export type Manifest = Record<string, unknown>;

/** The files of one leg. Frozen: paths never change after allocation. */
export class RunDir {
  readonly manifestPath: string;
  readonly checkpointPath: string;
  readonly branchesDir: string;
  readonly streamDir: string;

  constructor(
    readonly runId: string,
    readonly stateRoot: string,
    readonly artifactRoot: string,
    /** Why the directory could not be made (a full or read-only disk): the leg runs without it. */
    readonly unwritable: string | null = null,
  ) {
    this.manifestPath = path.join(stateRoot, "run.json");
    this.checkpointPath = path.join(stateRoot, "checkpoint.json");
    this.branchesDir = path.join(stateRoot, "branches");
    this.streamDir = path.join(stateRoot, "stream");
    Object.freeze(this);
  }

  branchPath(branchId: string): string {
    return path.join(this.branchesDir, `${assertSafeId(branchId, "branch id")}.json`);
  }

  streamPath(branchId: string): string {
    return path.join(this.streamDir, `${assertSafeId(branchId, "branch id")}.log`);
  }

  /** A per-agent folder under the artifact root; throws when it would land outside the root (symlinks followed). */
  agentArtifactDir(agentId: string): string {
    const dir = path.join(this.artifactRoot, assertSafeId(agentId, "agent id"));
    if (!isContained(this.artifactRoot, dir)) {
      throw new UsageError(`agent id ${JSON.stringify(agentId)}: artifact directory ${dir} escapes the artifact root ${this.artifactRoot}`);
    }
    return dir;
  }

  /** Writes run.json atomically (temp file + rename, 0600); the run's own identity fields cannot be overridden. */
  writeManifest(fields: Manifest = {}): void {
    const manifest: Manifest = { run_id: this.runId, state_root: this.stateRoot, artifact_root: this.artifactRoot };
    for (const [key, value] of Object.entries(fields)) {
      if (!(key in manifest)) manifest[key] = value;
    }
    // No fsync (it cost a leg 0.4-1.8 ms before its command starts): the ledger's setup commit is the
    // durable record of the leg, and nothing li does depends on run.json surviving a power loss. The
    // rename still keeps a reader from seeing half a manifest.
    writeFileAtomic(this.manifestPath, `${JSON.stringify(manifest, null, 2)}\n`, MANIFEST_MODE, { fsync: false });
  }

  /**
   * The manifest, or {} when none was written; invalid JSON, or anything li refuses to read there (a symlink,
   * a FIFO, over 1 MiB: the command could have put it there, §18), throws naming the file.
   */
  readManifest(): Manifest {
    const read = readUntrustedFile(this.manifestPath);
    if (!read.ok) {
      if (read.missing) return {};
      throw new Error(`${this.manifestPath}: manifest ${read.problem}`);
    }
    const parsed: unknown = JSON.parse(read.text);
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
      throw new Error(`${this.manifestPath}: manifest is not a JSON object`);
    }
    return parsed as Manifest;
  }

  /** The allocation's "setup not done yet" marker. */
  get setupPendingPath(): string {
    return path.join(this.stateRoot, SETUP_PENDING_FILE);
  }

  /** The leg's setup is done: this directory is no longer an orphan candidate. */
  clearSetupPending(): void {
    try {
      // unlink, not rm --force: Bun's rmSync reports EFAULT for a path below a regular file (a run root that is a file).
      fs.unlinkSync(this.setupPendingPath);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      // No marker, or no run directory at all (it could not be made): nothing to clear.
      if (code !== "ENOENT" && code !== "ENOTDIR") throw error;
    }
  }

  /** Creates the artifact root on demand; allocation never does (a --save-dir may be meant to appear only when used). */
  ensureArtifactRoot(): string {
    // An explicit mode, like every directory li creates: with umask 000 the default would be 0777 (§18).
    fs.mkdirSync(this.artifactRoot, { recursive: true, mode: STATE_DIR_MODE });
    return this.artifactRoot;
  }
}

export interface AllocateRunOptions {
  runsRoot: string;
  /** `--save-dir`: becomes the artifact root, resolved against the working directory, `~` expanded. */
  saveDir?: string | undefined;
  /** The run id asked for, as takeRunId chose it (`--run-id`, else LI_RUN_ID); absent: a generated one. */
  runId?: string | undefined;
  /** Unix seconds; the generated id uses its UTC time. */
  now?: number;
  /** Hex source for a generated id's suffix; the first 6 characters are used. */
  randomHex?: () => string;
  /** Home directory for `~` in saveDir; defaults to os.homedir(). */
  homeDir?: string;
  /**
   * A leg runs even when its directory cannot be made (§16): instead of throwing on a full or
   * read-only disk, removes what it made and returns the run marked `unwritable`.
   */
  tolerateUnwritable?: boolean;
}

/**
 * Allocates a new leg's run directory (SPEC §6): the run id asked for or a new one, claims RUNS_ROOT/<run_id>
 * (a usage error when it exists), creates branches/ and stream/, never the artifact root.
 */
export function allocateRun(options: AllocateRunOptions): RunDir {
  // The id names a directory: one that could leave RUNS_ROOT is refused here too, whoever chose it.
  const runId = options.runId !== undefined ? assertSafeId(options.runId, "run id") : generateRunId(options.now ?? Date.now() / 1000, options.randomHex ?? randomUuidHex);
  const runsRoot = path.resolve(options.runsRoot);
  const stateRoot = path.join(runsRoot, runId);
  const artifactRoot = options.saveDir !== undefined ? resolveSaveDir(options.saveDir, options.homeDir) : path.join(stateRoot, "artifacts");

  let claimed = false;
  try {
    fs.mkdirSync(runsRoot, { recursive: true, mode: STATE_DIR_MODE });
    try {
      // Non-recursive on purpose: the mkdir itself is the atomic claim of the run id.
      fs.mkdirSync(stateRoot, { mode: STATE_DIR_MODE });
      claimed = true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "EEXIST") throw new UsageError(`run id ${runId} is already used (${stateRoot} exists)`);
      throw err;
    }
    const run = new RunDir(runId, stateRoot, artifactRoot);
    // First, so that a li killed at any point from here to its setup leaves a directory the orphan sweep can tell.
    fs.writeFileSync(run.setupPendingPath, `${JSON.stringify({ run_id: runId, artifact_root: artifactRoot, pid: process.pid, allocated_at: options.now ?? Date.now() / 1000 })}\n`, { mode: MANIFEST_MODE, flag: "wx" });
    fs.mkdirSync(run.branchesDir, { mode: STATE_DIR_MODE });
    fs.mkdirSync(run.streamDir, { mode: STATE_DIR_MODE });
    return run;
  } catch (err) {
    if (err instanceof UsageError || !options.tolerateUnwritable) throw err;
    if (claimed) removeRunDir(stateRoot);
    return new RunDir(runId, stateRoot, artifactRoot, err instanceof Error ? err.message : String(err));
  }
}

/** Removes a run directory li made and could not fill (nothing in it is worth keeping); never throws. */
export function removeRunDir(stateRoot: string): void {
  try {
    fs.rmSync(stateRoot, { recursive: true, force: true });
  } catch {
    // A directory that cannot even be removed stays; prune --files may take it later.
  }
}

/** Rebuilds the RunDir of an existing leg from its recorded paths; creates nothing. */
export function openRun(fields: { runId: string; stateRoot: string; artifactRoot: string }): RunDir {
  return new RunDir(assertSafeId(fields.runId, "run id"), path.resolve(fields.stateRoot), path.resolve(fields.artifactRoot));
}

/**
 * The run id asked for: `--run-id`, else LI_RUN_ID; undefined when neither is given. LI_RUN_ID is removed
 * from `env` whatever wins, so a nested `li agent` in the command never reuses it.
 */
export function takeRunId(runIdFlag: string | undefined, env: Record<string, string | undefined>): string | undefined {
  const fromEnv = env[RUN_ID_ENV];
  delete env[RUN_ID_ENV];
  if (runIdFlag !== undefined) return assertSafeId(runIdFlag, "--run-id");
  if (fromEnv !== undefined && fromEnv !== "") return assertSafeId(fromEnv, RUN_ID_ENV);
  return undefined;
}

/** `<UTC YYYYMMDDTHHMMSS>-<6 hex>`. */
export function generateRunId(nowSeconds: number, randomHex: () => string = randomUuidHex): string {
  const stamp = new Date(Math.floor(nowSeconds) * 1000).toISOString(); // 2024-05-01T12:34:56.000Z
  const compact = stamp.slice(0, 19).replace(/[-:]/g, "");
  const suffix = randomHex().slice(0, 6).toLowerCase();
  if (!/^[0-9a-f]{6}$/.test(suffix)) throw new Error(`run id suffix ${JSON.stringify(suffix)} is not 6 hex characters`);
  return `${compact}-${suffix}`;
}

function randomUuidHex(): string {
  return crypto.randomUUID().replace(/-/g, "");
}

export interface BranchSnapshot {
  branchId: string;
  path: string;
  snapshot: unknown;
}

/**
 * Finds a branch snapshot in RUNS_ROOT/<run>/branches/<branch_id>.json, for resuming a branch
 * the ledger no longer holds (§10): exact id first, then a unique prefix. When several legs
 * left a snapshot of the same branch, the newest readable one wins. Ambiguity is a usage error.
 */
export function findBranchSnapshot(runsRoot: string, branchIdOrPrefix: string): BranchSnapshot | null {
  if (branchIdOrPrefix === "") return null;
  const files = listBranchSnapshots(runsRoot);
  const exact = files.filter((file) => file.branchId === branchIdOrPrefix);
  if (exact.length > 0) return newestReadable(exact);
  const matches = files.filter((file) => file.branchId.startsWith(branchIdOrPrefix));
  const ids = [...new Set(matches.map((file) => file.branchId))].sort();
  if (ids.length > 1) {
    throw new UsageError(`branch prefix ${JSON.stringify(branchIdOrPrefix)} is ambiguous: ${ids.join(", ")}`);
  }
  return matches.length > 0 ? newestReadable(matches) : null;
}

interface SnapshotFile {
  branchId: string;
  path: string;
}

function listBranchSnapshots(runsRoot: string): SnapshotFile[] {
  const files: SnapshotFile[] = [];
  for (const run of readDirOrEmpty(runsRoot)) {
    if (!run.isDirectory()) continue;
    const branchesDir = path.join(runsRoot, run.name, "branches");
    for (const entry of readDirOrEmpty(branchesDir)) {
      if (!entry.isFile() || !entry.name.endsWith(".json")) continue;
      const branchId = entry.name.slice(0, -".json".length);
      if (isSafeId(branchId)) files.push({ branchId, path: path.join(branchesDir, entry.name) });
    }
  }
  return files;
}

function mtimeOrZero(file: string): number {
  try {
    return fs.lstatSync(file).mtimeMs;
  } catch {
    return 0;
  }
}

function readDirOrEmpty(dir: string): fs.Dirent[] {
  try {
    return fs.readdirSync(dir, { withFileTypes: true });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return [];
    throw err;
  }
}

function newestReadable(files: SnapshotFile[]): BranchSnapshot {
  const byAge = files
    .map((file) => ({ ...file, mtime: mtimeOrZero(file.path) }))
    .sort((a, b) => b.mtime - a.mtime || b.path.localeCompare(a.path));
  for (const file of byAge) {
    // A command can write into its run directory: snapshots are read bounded, never through a symlink or FIFO (§18).
    const read = readUntrustedFile(file.path);
    if (!read.ok) continue;
    try {
      return { branchId: file.branchId, path: file.path, snapshot: JSON.parse(read.text) };
    } catch {
      // A torn or corrupt snapshot: an older leg's copy of the same branch may still be good.
    }
  }
  const newest = byAge[0];
  throw new UsageError(`branch ${files[0]?.branchId}: snapshot ${newest?.path} is not readable JSON`);
}
