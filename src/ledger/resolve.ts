// Finds the entity an id (or a unique id prefix) names, across kinds, in a fixed order (§11).

import { ENTITY_KINDS, type EntityKind, type WAITABLE_KINDS } from "../lifecycle/policy.ts";
import { UnknownIdError, UsageError } from "../util/errors.ts";
import type { Backend } from "./backend.ts";
import type { LedgerReads, LookupKind } from "./reads.ts";

export interface ResolvedId {
  kind: EntityKind;
  id: string;
  /** Set when the id named a branch or a run and resolved to its owning session. */
  via?: { kind: "branch" | "run"; id: string };
}

export interface LookupMatch {
  kind: LookupKind;
  id: string;
}

export type Resolution = { found: ResolvedId } | { notFound: true } | { ambiguous: LookupMatch[] };

/** The lookup order of `li wait` (§11): exact matches are tried in this order, then prefixes across all. */
export const WAIT_LOOKUP_ORDER: readonly LookupKind[] = Object.freeze([
  "session",
  "invocation",
  "play",
  "branch",
  "run",
  "schedule_run",
] as const satisfies readonly ((typeof WAITABLE_KINDS)[number] | "branch" | "run")[]);

/** The same order plus the kinds only the views show (those `li wait` does not wait on). */
export const VIEW_LOOKUP_ORDER: readonly LookupKind[] = Object.freeze([...WAIT_LOOKUP_ORDER, ...ENTITY_KINDS.filter((k) => !WAIT_LOOKUP_ORDER.includes(k))]);

/** A full UUID is exact-only: a 36-character id never matches as a prefix of something longer. */
export const EXACT_ONLY_LENGTH = 36;

async function toTarget(reads: LedgerReads, match: LookupMatch): Promise<ResolvedId | null> {
  if (match.kind !== "branch" && match.kind !== "run") return { kind: match.kind, id: match.id };
  const session = await reads.owningSession(match.kind, match.id);
  return session === null ? null : { kind: "session", id: session, via: { kind: match.kind, id: match.id } };
}

/** Exact match in `kinds` order first; then a prefix match across all of them (ambiguity reported, never first-row-wins). */
export async function resolveIn(reads: LedgerReads, input: string, kinds: readonly LookupKind[]): Promise<Resolution> {
  for (const kind of kinds) {
    if (await reads.exists(kind, input)) {
      const target = await toTarget(reads, { kind, id: input });
      return target ? { found: target } : { notFound: true };
    }
  }
  if (input.length >= EXACT_ONLY_LENGTH) return { notFound: true };
  const matches: LookupMatch[] = [];
  for (const kind of kinds) {
    for (const id of await reads.idsWithPrefix(kind, input, 2)) matches.push({ kind, id });
  }
  if (matches.length === 0) return { notFound: true };
  if (matches.length > 1) return { ambiguous: matches };
  const target = await toTarget(reads, matches[0]!);
  return target ? { found: target } : { notFound: true };
}

/** One line naming an ambiguous prefix and some of what it matches. */
export function ambiguityMessage(input: string, matches: readonly LookupMatch[]): string {
  const sample = matches.slice(0, 4).map((m) => `${m.kind} ${m.id}`).join(", ");
  return `id prefix '${input}' is ambiguous (${sample}${matches.length >= 2 ? ", …" : ""}); give more characters`;
}

/** The same, for commands that need exactly one entity: not found and ambiguous are usage errors. */
export async function resolveOne(backend: Backend, input: string, kinds: readonly LookupKind[]): Promise<ResolvedId> {
  return resolveOneIn(backend.reads, input, kinds);
}

export async function resolveOneIn(reads: LedgerReads, input: string, kinds: readonly LookupKind[]): Promise<ResolvedId> {
  const id = input.trim();
  if (!id) throw new UsageError("an id is required");
  const r = await resolveIn(reads, id, kinds);
  if ("found" in r) return r.found;
  if ("notFound" in r) throw new UnknownIdError(id);
  throw new UsageError(ambiguityMessage(id, r.ambiguous));
}
