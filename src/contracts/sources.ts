// Where artifact declarations come from (SPEC §7): `--artifact` flags, a profile file, a playbook file.

import path from "node:path";
import { z } from "zod";
import { UsageError } from "../util/errors.ts";
import { assertSafeId } from "../util/ids.ts";
import { readUntrustedFile } from "../util/untrusted-file.ts";
import {
  ARTIFACT_ID_PATTERN,
  assertSafeArtifactPath,
  checkDeclarations,
  resolveContract,
  type ArtifactContract,
  type ArtifactDeclaration,
} from "./artifacts.ts";

export interface ArtifactFlag {
  id: string;
  path: string;
  required: boolean;
}

/** Parses one `--artifact ID=PATH` value; a trailing `?` marks the artifact optional. */
export function parseArtifactFlag(value: string): ArtifactFlag {
  const culprit = `--artifact ${JSON.stringify(value)}`;
  const eq = value.indexOf("=");
  if (eq < 0) throw new UsageError(`${culprit}: expected ID=PATH (a trailing ? marks it optional)`);
  const id = value.slice(0, eq);
  const optional = value.endsWith("?");
  const artifactPath = value.slice(eq + 1, optional ? -1 : undefined);
  if (!ARTIFACT_ID_PATTERN.test(id)) throw new UsageError(`${culprit}: id must match ${ARTIFACT_ID_PATTERN.source}`);
  try {
    assertSafeArtifactPath(artifactPath, `artifact ${JSON.stringify(id)}`);
  } catch (err) {
    throw new UsageError(`${culprit}: ${(err as Error).message}`);
  }
  return { id, path: artifactPath, required: !optional };
}

/** Parses every `--artifact` value; one id given twice is a usage error rather than a silent overwrite. */
export function parseArtifactFlags(values: readonly string[]): ArtifactFlag[] {
  const seen = new Set<string>();
  return values.map((value) => {
    const flag = parseArtifactFlag(value);
    if (seen.has(flag.id)) throw new UsageError(`--artifact ${JSON.stringify(value)}: id ${JSON.stringify(flag.id)} is given more than once`);
    seen.add(flag.id);
    return flag;
  });
}

/** Declarations read from one file; `entries` is undefined when the file declares no `artifacts.expected`. */
export interface LoadedDeclarations {
  path: string;
  entries: ArtifactDeclaration[] | undefined;
  warnings: string[];
}

// Other keys of a profile or playbook belong to other features: only the artifacts part is checked here.
const DeclarationFile = z
  .looseObject({
    artifacts: z.looseObject({ expected: z.array(z.record(z.string(), z.unknown())).nullish() }).nullish(),
  })
  .nullable();

/** The profile path for `--profile NAME`: `<project>/.li/profiles/NAME.yaml`. */
export function profilePath(projectDir: string, name: string): string {
  return path.join(path.resolve(projectDir), ".li", "profiles", `${assertSafeId(name, "--profile")}.yaml`);
}

export function loadProfile(projectDir: string, name: string): LoadedDeclarations {
  return loadDeclarations(profilePath(projectDir, name), "--profile");
}

export function loadPlaybook(file: string, cwd: string = process.cwd()): LoadedDeclarations {
  return loadDeclarations(path.resolve(cwd, file), "--playbook");
}

function loadDeclarations(file: string, flag: string): LoadedDeclarations {
  // Read with the caller's own rights, bounded (§18): no final symlink, no FIFO, at most 1 MiB. A refused file is
  // a usage error, as a missing one is; messages name the file and a key path, never the file's content.
  const read = readUntrustedFile(file);
  if (!read.ok) {
    if (read.missing) throw new UsageError(`${flag}: ${file} does not exist`);
    throw new UsageError(`${flag}: ${file} ${read.problem}`);
  }
  const text = read.text;
  let data: unknown;
  try {
    data = Bun.YAML.parse(text);
  } catch (err) {
    throw new UsageError(`${file}: invalid YAML (${oneLine((err as Error).message)})`);
  }
  const parsed = DeclarationFile.safeParse(data ?? null);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue && issue.path.length > 0 ? `${keyPath(issue.path)}: ` : "";
    throw new UsageError(`${file}: ${where}${oneLine(issue?.message ?? "invalid").replace(/^Invalid input: /, "")}`);
  }
  const entries = parsed.data?.artifacts?.expected ?? undefined;
  // Said out loud (§18): a file that declares nothing was most likely not meant (a typo, or /etc/shadow).
  if (entries === undefined) return { path: file, entries: undefined, warnings: [`${flag} ${file}: declares no artifacts (no artifacts.expected list); it adds nothing to the contract`] };
  const warnings = withFile(file, () => checkDeclarations(entries));
  return { path: file, entries, warnings: warnings.map((w) => `${file}: ${w}`) };
}

function withFile<T>(file: string, check: () => T): T {
  try {
    return check();
  } catch (err) {
    if (err instanceof UsageError) throw new UsageError(`${file}: ${err.message}`);
    throw err;
  }
}

/** `artifacts.expected[2]`, as a user would point at it in the file. */
function keyPath(segments: readonly PropertyKey[]): string {
  return segments.map((segment, i) => (typeof segment === "number" ? `[${segment}]` : `${i > 0 ? "." : ""}${String(segment)}`)).join("");
}

function oneLine(message: string): string {
  return message.replace(/\s*\n\s*/g, " ").trim();
}

export interface ContractRequest {
  /** The project directory whose `.li/profiles/` holds `--profile NAME`. */
  projectDir: string;
  profile?: string | undefined;
  playbook?: string | undefined;
  artifactFlags?: readonly string[] | undefined;
  /** Resolves a relative `--playbook`; defaults to the working directory. */
  cwd?: string | undefined;
}

/**
 * Reads every source a leg names and overlays them by id (profile < playbook < --artifact).
 * The contract is null when nothing is declared; warnings name the file and field to ignore.
 */
export function loadContract(request: ContractRequest): { contract: ArtifactContract | null; warnings: string[] } {
  const profile = request.profile !== undefined ? loadProfile(request.projectDir, request.profile) : undefined;
  const playbook = request.playbook !== undefined ? loadPlaybook(request.playbook, request.cwd) : undefined;
  const cli = parseArtifactFlags(request.artifactFlags ?? []);
  const contract = resolveContract({ profile: profile?.entries, playbook: playbook?.entries, cli });
  return { contract, warnings: [...(profile?.warnings ?? []), ...(playbook?.warnings ?? [])] };
}
