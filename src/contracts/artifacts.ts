// Artifact contracts (SPEC §7, ADR-0064 D3): validate declarations, overlay them by id, verify what a leg produced
// (path containment is ./containment.ts).

import fs from "node:fs";
import path from "node:path";
import { UsageError } from "../util/errors.ts";
import { isContained, isWithin } from "./containment.ts";

export const ARTIFACT_SOURCES = ["agent_profile", "playbook", "cli"] as const;
export type ArtifactSource = (typeof ARTIFACT_SOURCES)[number];

export interface ExpectedArtifact {
  id: string;
  path: string;
  required: boolean;
  description: string;
  source: string;
}

export interface ArtifactContract {
  expected: ExpectedArtifact[];
}

export interface ProducedArtifact {
  id: string;
  path: string;
  size: number;
  present: boolean;
}

export const VERIFICATION_STATUSES = ["passed", "failed", "warning"] as const;
export type VerificationStatus = (typeof VERIFICATION_STATUSES)[number];

export interface VerificationResult {
  status: VerificationStatus;
  /** Unix seconds. */
  checked_at: number;
  missing_required: ExpectedArtifact[];
  missing_optional: ExpectedArtifact[];
  produced: ProducedArtifact[];
}

/** One declaration as written in a profile, a playbook or a flag, before defaults are filled in. */
export type ArtifactDeclaration = Record<string, unknown>;

export const ARTIFACT_ID_PATTERN = /^[A-Za-z0-9_-]+$/;
const KNOWN_FIELDS: ReadonlySet<string> = new Set(["id", "path", "required", "description", "source"]);
const GLOB_CHARS = /[*?[\]{}]/;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** How an entry is named in messages: by its id when it has a usable one, else by position. */
function entryLabel(raw: unknown, index: number): string {
  if (isRecord(raw) && typeof raw.id === "string" && raw.id !== "") return `artifact ${JSON.stringify(raw.id)}`;
  return `artifact entry ${index + 1}`;
}

/**
 * Throws a UsageError when `p` is not a safe relative artifact path; `label` names the culprit.
 * Containment under a root is checked separately (it needs the root).
 */
export function assertSafeArtifactPath(p: unknown, label: string): asserts p is string {
  if (typeof p !== "string" || p === "") {
    throw new UsageError(`${label}: path must be a non-empty string (got ${describeValue(p)})`);
  }
  const shown = JSON.stringify(p);
  if (p.includes("\0")) throw new UsageError(`${label}: path ${shown} contains a NUL character`);
  if (path.isAbsolute(p)) throw new UsageError(`${label}: path ${shown} must be relative to the artifact root`);
  if (GLOB_CHARS.test(p)) throw new UsageError(`${label}: path ${shown} contains a glob character (* ? [ ] { })`);
  if (p.split("/").includes("..")) throw new UsageError(`${label}: path ${shown} must not contain a ".." segment`);
}

function describeValue(value: unknown): string {
  if (value === undefined) return "nothing";
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  if (typeof value === "object") return "a mapping";
  return `${typeof value} ${JSON.stringify(value)}`;
}

/** Checks one entry's shape; returns warnings for fields v1 does not know. */
function checkEntry(raw: unknown, index: number): string[] {
  const label = entryLabel(raw, index);
  if (!isRecord(raw)) throw new UsageError(`${label}: must be a mapping (got ${describeValue(raw)})`);
  if (typeof raw.id !== "string" || !ARTIFACT_ID_PATTERN.test(raw.id)) {
    throw new UsageError(`${label}: id must match ${ARTIFACT_ID_PATTERN.source} (got ${describeValue(raw.id)})`);
  }
  assertSafeArtifactPath(raw.path, label);
  if (raw.required !== undefined && typeof raw.required !== "boolean") {
    throw new UsageError(`${label}: required must be true or false (got ${describeValue(raw.required)})`);
  }
  for (const field of ["description", "source"] as const) {
    if (raw[field] !== undefined && typeof raw[field] !== "string") {
      throw new UsageError(`${label}: ${field} must be a string (got ${describeValue(raw[field])})`);
    }
  }
  return Object.keys(raw)
    .filter((key) => !KNOWN_FIELDS.has(key))
    .map((key) => `${label}: unknown field ${JSON.stringify(key)} ignored`);
}

/**
 * Validates a contract as stored or received (SPEC §7). Returns warnings (unknown fields);
 * throws a one-line UsageError naming the artifact on the first problem. `null`/`undefined`
 * is a valid absent contract. With `artifactRoot`, every path must stay under the root after
 * symlinks are resolved.
 */
export function validateContract(contract: unknown, artifactRoot?: string): string[] {
  if (contract === null || contract === undefined) return [];
  if (!isRecord(contract)) throw new UsageError(`artifact contract: must be a mapping with an "expected" list (got ${describeValue(contract)})`);
  const expected = contract.expected;
  if (!Array.isArray(expected)) throw new UsageError(`artifact contract: "expected" must be a list (got ${describeValue(expected)})`);
  const warnings: string[] = [];
  const seen = new Set<string>();
  expected.forEach((raw, index) => {
    warnings.push(...checkEntry(raw, index));
    const entry = raw as { id: string; path: string };
    if (seen.has(entry.id)) throw new UsageError(`${entryLabel(raw, index)}: id is declared more than once`);
    seen.add(entry.id);
    if (artifactRoot !== undefined && !isContained(artifactRoot, path.resolve(artifactRoot, entry.path))) {
      throw new UsageError(`${entryLabel(raw, index)}: path ${JSON.stringify(entry.path)} escapes the artifact root ${artifactRoot}`);
    }
  });
  return warnings;
}

/**
 * Checks one source's declarations entry by entry, without the uniqueness rule: within a source,
 * as across sources, a repeated id is collapsed by resolveContract (the later one wins).
 */
export function checkDeclarations(declarations: unknown): string[] {
  if (!Array.isArray(declarations)) throw new UsageError(`artifact contract: "expected" must be a list (got ${describeValue(declarations)})`);
  return declarations.flatMap((raw, index) => checkEntry(raw, index));
}

export interface ContractSources {
  profile?: readonly unknown[] | null | undefined;
  playbook?: readonly unknown[] | null | undefined;
  cli?: readonly unknown[] | null | undefined;
}

/**
 * Overlays declarations by id in the order profile < playbook < cli: a later entry replaces an
 * earlier one and keeps the earlier one's position. Fills defaults (required true, description
 * ""), stamps the source, drops unknown fields. Null when nothing is declared. Containment needs
 * the artifact root: call validateContract(contract, root) once the run is allocated.
 */
export function resolveContract(sources: ContractSources): ArtifactContract | null {
  const byId = new Map<string, ExpectedArtifact>();
  const order: [ArtifactSource, readonly unknown[] | null | undefined][] = [
    ["agent_profile", sources.profile],
    ["playbook", sources.playbook],
    ["cli", sources.cli],
  ];
  for (const [source, declarations] of order) {
    if (declarations === null || declarations === undefined) continue;
    if (!Array.isArray(declarations)) throw new UsageError(`artifact contract (${source}): "expected" must be a list (got ${describeValue(declarations)})`);
    declarations.forEach((raw, index) => {
      checkEntry(raw, index);
      const entry = raw as ArtifactDeclaration & { id: string; path: string };
      byId.set(entry.id, {
        id: entry.id,
        path: entry.path,
        required: typeof entry.required === "boolean" ? entry.required : true,
        description: typeof entry.description === "string" ? entry.description : "",
        source,
      });
    });
  }
  if (byId.size === 0) return null;
  const contract: ArtifactContract = { expected: [...byId.values()] };
  validateContract(contract);
  return contract;
}

/**
 * Checks each expected artifact under the root (SPEC §7): produced only as a non-empty regular
 * file whose real location stays under the root's real location. Null for no contract.
 */
export function verifyContract(
  contract: ArtifactContract | null | undefined,
  artifactRoot: string | null | undefined,
  now: number = Date.now() / 1000,
): VerificationResult | null {
  if (contract === null || contract === undefined) return null;
  const rootReal = artifactRoot ? realDirectory(artifactRoot) : null;
  const result: VerificationResult = { status: "passed", checked_at: now, missing_required: [], missing_optional: [], produced: [] };
  for (const entry of contract.expected) {
    const size = rootReal === null ? null : producedSize(rootReal, entry.path);
    if (size !== null) result.produced.push({ id: entry.id, path: entry.path, size, present: true });
    else if (entry.required === false) result.missing_optional.push(entry);
    else result.missing_required.push(entry);
  }
  if (result.missing_required.length > 0) result.status = "failed";
  else if (result.missing_optional.length > 0) result.status = "warning";
  return result;
}

function realDirectory(dir: string): string | null {
  try {
    const real = fs.realpathSync(dir);
    return fs.statSync(real).isDirectory() ? real : null;
  } catch {
    return null;
  }
}

/** Byte size of a produced artifact, or null when it is missing, empty, not a file, unsafe or outside the root. */
function producedSize(rootReal: string, relative: string): number | null {
  try {
    assertSafeArtifactPath(relative, "artifact");
  } catch {
    return null; // a contract read back from storage is trusted only as far as it is safe
  }
  try {
    const real = fs.realpathSync(path.resolve(rootReal, relative));
    if (!isWithin(rootReal, real)) return null;
    const stat = fs.statSync(real);
    return stat.isFile() && stat.size > 0 ? stat.size : null;
  } catch {
    return null;
  }
}
