// Leg, branch and message storage for SQLite (SPEC §3, §8): the rows a leg writes besides its session's status.

import { and, asc, eq, isNull, sql } from "drizzle-orm";
import type { BunSQLiteDatabase } from "drizzle-orm/bun-sqlite";
import type { BranchRow, LegPatch, LegRow, MessageRow } from "../backend.ts";
import * as schema from "./schema.ts";

type Orm = BunSQLiteDatabase<typeof schema>;

export function insertBranch(orm: Orm, row: BranchRow): void {
  orm.insert(schema.branches).values(row).run();
}

export function insertLeg(orm: Orm, row: LegRow): void {
  orm.insert(schema.legs).values(row).run();
}

export function updateLeg(orm: Orm, id: string, patch: LegPatch, opts: { onlyOpen?: boolean } = {}): number {
  if (Object.keys(patch).length === 0) return 0;
  const t = schema.legs;
  const where = opts.onlyOpen ? and(eq(t.id, id), isNull(t.ended_at)) : eq(t.id, id);
  const result = orm.update(t).set(patch).where(where).run() as unknown as { changes: number };
  return result.changes;
}

export function getLeg(orm: Orm, id: string): LegRow | null {
  return (orm.select().from(schema.legs).where(eq(schema.legs.id, id)).get() as LegRow | undefined) ?? null;
}

export function listLegs(orm: Orm, sessionId: string): LegRow[] {
  const t = schema.legs;
  return orm.select().from(t).where(eq(t.session_id, sessionId)).orderBy(asc(t.seq)).all() as LegRow[];
}

export function nextLegSeq(orm: Orm, sessionId: string): number {
  const t = schema.legs;
  const row = orm.select({ max: sql<number | null>`MAX(${t.seq})` }).from(t).where(eq(t.session_id, sessionId)).get();
  return (row?.max ?? 0) + 1;
}

export function runIdTaken(orm: Orm, runId: string): boolean {
  const t = schema.legs;
  return orm.select({ id: t.id }).from(t).where(eq(t.run_id, runId)).get() !== undefined;
}

export function getBranch(orm: Orm, id: string): BranchRow | null {
  return (orm.select().from(schema.branches).where(eq(schema.branches.id, id)).get() as BranchRow | undefined) ?? null;
}

export function insertMessage(orm: Orm, row: MessageRow): void {
  orm.insert(schema.messages).values(row).run();
}

export function listMessages(orm: Orm, sessionId: string): MessageRow[] {
  const t = schema.messages;
  return orm.select().from(t).where(eq(t.session_id, sessionId)).orderBy(asc(t.created_at), asc(t.id)).all() as MessageRow[];
}
