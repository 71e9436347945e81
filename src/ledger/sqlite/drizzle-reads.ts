// History listings built with drizzle over the schema: off every hot path, so loaded on demand.

import type { Database } from "bun:sqlite";
import { and, asc, eq, gte, lt } from "drizzle-orm";
import { drizzle } from "drizzle-orm/bun-sqlite";
import type { EntityKind } from "../../lifecycle/policy.ts";
import type { AdminEventRow, TransitionRow } from "../backend.ts";
import * as schema from "./schema.ts";

const orms = new WeakMap<Database, ReturnType<typeof drizzle<typeof schema>>>();
const ormOf = (db: Database) => {
  let orm = orms.get(db);
  if (!orm) orms.set(db, (orm = drizzle({ client: db, schema })));
  return orm;
};

/** Ids of `kind` starting with `prefix`, by an index range scan on the primary key. */
export function idsByPrefix(db: Database, kind: EntityKind, prefix: string, limit: number): string[] {
  const t = schema.ENTITY_TABLES[kind] as typeof schema.sessions;
  return ormOf(db)
    .select({ id: t.id })
    .from(t)
    .where(and(gte(t.id, prefix), lt(t.id, prefix + "\uffff")))
    .orderBy(asc(t.id))
    .limit(limit)
    .all()
    .map((r) => r.id);
}

export function transitionsOf(db: Database, kind: EntityKind, id: string): TransitionRow[] {
  const t = schema.statusTransitions;
  return ormOf(db)
    .select()
    .from(t)
    .where(and(eq(t.entity_type, kind), eq(t.entity_id, id)))
    .orderBy(asc(t.created_at), asc(t.seq))
    .all() as TransitionRow[];
}

export function adminEventsOf(db: Database, kind: EntityKind, id: string): AdminEventRow[] {
  const t = schema.adminEvents;
  return ormOf(db)
    .select()
    .from(t)
    .where(and(eq(t.entity_type, kind), eq(t.entity_id, id)))
    .orderBy(asc(t.created_at))
    .all() as AdminEventRow[];
}
