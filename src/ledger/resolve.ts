// Finds the entity an id (or a unique id prefix) names, across kinds, in a fixed order.

import type { EntityKind } from "../lifecycle/policy.ts";
import { UsageError } from "../util/errors.ts";
import type { Backend } from "./backend.ts";

export interface ResolvedId {
  kind: EntityKind;
  id: string;
}

export type Resolution =
  | { found: ResolvedId }
  | { notFound: true }
  | { ambiguous: ResolvedId[] };

/** Exact match in `kinds` order first; then a prefix match across all of them (ambiguity reported). */
export async function resolveId(backend: Backend, input: string, kinds: readonly EntityKind[]): Promise<Resolution> {
  for (const kind of kinds) {
    if (await backend.getEntity(kind, input)) return { found: { kind, id: input } };
  }
  const matches: ResolvedId[] = [];
  for (const kind of kinds) {
    for (const id of await backend.findIdsByPrefix(kind, input, 2)) matches.push({ kind, id });
  }
  if (matches.length === 1) return { found: matches[0]! };
  if (matches.length === 0) return { notFound: true };
  return { ambiguous: matches };
}

/** The same, for commands that need exactly one entity: not found and ambiguous are usage errors. */
export async function resolveOne(backend: Backend, input: string, kinds: readonly EntityKind[]): Promise<ResolvedId> {
  const id = input.trim();
  if (!id) throw new UsageError("an id is required");
  const r = await resolveId(backend, id, kinds);
  if ("found" in r) return r.found;
  if ("notFound" in r) throw new UsageError(`no entity matches id '${id}'`);
  const sample = r.ambiguous.map((m) => `${m.kind} ${m.id}`).join(", ");
  throw new UsageError(`id prefix '${id}' is ambiguous (${sample}${r.ambiguous.length >= 2 ? ", …" : ""}); give more characters`);
}
