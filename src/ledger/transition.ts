// The guarded status write (SPEC §5, ADR-0064 D5): the one seam through which every status changes.

import { canonicalKind, POLICIES, type EntityKind, type Policy } from "../lifecycle/policy.ts";
import { reasonRefusal } from "../lifecycle/reasons.ts";
import { NotFoundError } from "../util/errors.ts";
import { TransitionRejectedError, TransitionValidationError } from "./errors.ts";
import type { IdFactory } from "../util/ids.ts";
import type { Tx } from "./backend.ts";
import { SOURCES, type Source, type StatusRow } from "./rows.ts";
import type { Awaitable } from "../util/awaitable.ts";

export { TransitionRejectedError, TransitionValidationError };

/**
 * The fields a transition command may carry, each with its check — declared once as data. The
 * check is hand-written rather than a zod schema: every leg runs this on its way to the final
 * write, and zod costs a leg ~7 ms (import, schema build, first-parse compile; docs/benchmarks.md).
 */
type FieldCheck = (value: unknown) => string | null;
const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const nonEmptyString: FieldCheck = (v) => (typeof v !== "string" ? "expected a string" : v.length === 0 ? "must not be empty" : null);
const string: FieldCheck = (v) => (typeof v === "string" ? null : "expected a string");
const record: FieldCheck = (v) => (isRecord(v) ? null : "expected an object");
const COMMAND_FIELDS = {
  newStatus: nonEmptyString,
  reasonCode: nonEmptyString,
  reasonSummary: string,
  evidenceRefs: (v) => (!Array.isArray(v) ? "expected an array" : v.every(isRecord) ? null : "expected an array of objects"),
  source: (v) => ((SOURCES as readonly unknown[]).includes(v) ? null : `expected one of ${SOURCES.join(", ")}`),
  actor: (v) => (v === null ? null : string(v)),
  metadata: record,
  expectedStatuses: (v) => (Array.isArray(v) && v.every((s) => s === null || typeof s === "string") ? null : "expected an array of statuses or null"),
  expectedUpdatedAt: (v) => (typeof v === "number" && Number.isFinite(v) ? null : "expected a finite number"),
  extraFields: record,
  override: (v) => (typeof v === "boolean" ? null : "expected a boolean"),
  overrideActor: string,
  overrideJustification: string,
} as const satisfies Record<keyof TransitionCommandData, FieldCheck>;

/** A guarded write's command (SPEC §5). Only `newStatus` and `reasonCode` are required. */
export interface TransitionCommandData {
  newStatus: string;
  reasonCode: string;
  reasonSummary?: string;
  evidenceRefs?: Record<string, unknown>[];
  source?: Source;
  actor?: string | null;
  metadata?: Record<string, unknown>;
  expectedStatuses?: (string | null)[];
  expectedUpdatedAt?: number;
  extraFields?: Record<string, unknown>;
  override?: boolean;
  overrideActor?: string;
  overrideJustification?: string;
}

export type TransitionCommand = TransitionCommandData & {
  /** Runs inside the same transaction, only when the write applied (e.g. to close or open a `legs` row). */
  alsoInTransaction?: (tx: Tx, applied: AppliedTransition) => Awaitable<void>;
};

/** The first problem with the command's shape as `path: message`, or null. Unknown keys are refused. */
function commandShapeProblem(data: Record<string, unknown>): string | null {
  for (const key of ["newStatus", "reasonCode"] as const) if (data[key] === undefined) return `${key}: required`;
  for (const [key, value] of Object.entries(data)) {
    if (!Object.hasOwn(COMMAND_FIELDS, key)) return `command: unknown field '${key}'`;
    if (value === undefined) continue; // an optional field given as undefined is absent
    const problem = COMMAND_FIELDS[key as keyof typeof COMMAND_FIELDS](value);
    if (problem) return `${key}: ${problem}`;
  }
  return null;
}

export interface AppliedTransition {
  transitionId: string;
  seq: number;
  kind: EntityKind;
  entityId: string;
  previousStatus: string | null;
  status: string;
  reasonCode: string;
  occurredAt: number;
  terminalEvent: boolean;
}

export type TransitionOutcome =
  | { result: "applied"; transition: AppliedTransition }
  | { result: "conflict"; current: StatusRow; why: "expected_status" | "expected_updated_at" | "cas_lost" }
  | { result: "rejected"; error: TransitionRejectedError };

/** Test seams: pause or fail between the steps of a guarded write. */
export interface TransitionHooks {
  afterRead?(tx: Tx, kind: EntityKind, id: string): Awaitable<void>;
  afterUpdate?(tx: Tx, kind: EntityKind, id: string): Awaitable<void>;
}

export interface TransitionContext {
  now: () => number;
  newId: IdFactory;
  hooks?: TransitionHooks;
}

export interface ValidatedTransition {
  kind: EntityKind;
  policy: Policy;
  command: TransitionCommandData;
  alsoInTransaction?: TransitionCommand["alsoInTransaction"];
}

/** Every check that needs no database: kind, status, reason, source, extra fields, override. */
export function validateTransition(entityType: string, command: TransitionCommand): ValidatedTransition {
  const kind = canonicalKind(entityType);
  if (!kind) throw new TransitionValidationError(`unknown entity kind '${entityType}'`);
  const { alsoInTransaction, ...data } = command;
  const problem = commandShapeProblem(data);
  if (problem) throw new TransitionValidationError(`invalid transition: ${problem}`);
  const cmd = data as TransitionCommandData;
  const policy = POLICIES[kind];
  if (!policy.statuses.has(cmd.newStatus)) {
    throw new TransitionValidationError(`'${cmd.newStatus}' is not a ${kind} status (valid: ${[...policy.statuses].join(", ")})`);
  }
  const refusal = reasonRefusal(kind, cmd.reasonCode);
  if (refusal) throw new TransitionValidationError(refusal);
  for (const expected of cmd.expectedStatuses ?? []) {
    if (expected !== null && !policy.statuses.has(expected)) {
      throw new TransitionValidationError(`expected status '${expected}' is not a ${kind} status`);
    }
  }
  for (const field of Object.keys(cmd.extraFields ?? {})) {
    if (!policy.extraFields.has(field)) {
      throw new TransitionValidationError(`field '${field}' may not be written with a ${kind} status (allowed: ${[...policy.extraFields].join(", ") || "none"})`);
    }
  }
  if (cmd.override && (!cmd.overrideActor?.trim() || !cmd.overrideJustification?.trim())) {
    throw new TransitionValidationError("an override needs a non-empty actor and justification");
  }
  return { kind, policy, command: cmd, ...(alsoInTransaction ? { alsoInTransaction } : {}) };
}

function json(value: unknown): string | null {
  return value === undefined || value === null ? null : JSON.stringify(value);
}

function encodeExtra(extra: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(extra)) {
    out[k] = v !== null && typeof v === "object" ? JSON.stringify(v) : v === undefined ? null : v;
  }
  return out;
}

/** One `admin_events` row about this entity: a rejection or an override (§5). */
function audit(tx: Tx, ctx: TransitionContext, eventType: string, kind: EntityKind, id: string, now: number, actor: string | null, justification: string | null, payload: object): Awaitable<void> {
  return tx.insertAdminEvent({ id: ctx.newId(), event_type: eventType, entity_type: kind, entity_id: id, actor, justification, payload: JSON.stringify(payload), created_at: now });
}

/** The session's current leg once the write applies: the one it sets, else the one it had. */
function legAfter(row: StatusRow, extra: Record<string, unknown> | undefined): string | null {
  if (extra && Object.hasOwn(extra, "current_leg_id")) return (extra.current_leg_id as string | null) ?? null;
  return row.current_leg_id ?? null;
}

/**
 * The guarded write inside an open transaction. Returns the outcome; never throws for a guard
 * conflict or a policy rejection (the caller commits the rejection audit row, then throws).
 */
export async function applyTransition(tx: Tx, ctx: TransitionContext, v: ValidatedTransition, id: string): Promise<TransitionOutcome> {
  const { kind, policy, command: cmd } = v;
  const row = await tx.readStatus(kind, id);
  if (!row) throw new NotFoundError(kind, id);
  await ctx.hooks?.afterRead?.(tx, kind, id);
  if (cmd.expectedStatuses && !cmd.expectedStatuses.includes(row.status)) {
    return { result: "conflict", current: row, why: "expected_status" };
  }
  if (cmd.expectedUpdatedAt !== undefined && cmd.expectedUpdatedAt !== row.updated_at) {
    return { result: "conflict", current: row, why: "expected_updated_at" };
  }
  const from = row.status;
  const to = cmd.newStatus;
  const now = ctx.now();
  if (from !== to && !cmd.override) {
    const fromTerminal = from !== null && policy.terminal.has(from);
    const declared = from !== null && (policy.edges.get(from)?.has(to) ?? false);
    if (fromTerminal || !declared) {
      const error = new TransitionRejectedError(kind, id, from, to, fromTerminal ? "terminal_exit" : "undeclared_edge");
      await audit(tx, ctx, "status_transition_rejected", kind, id, now, cmd.actor ?? null, null, { from, to, reason_code: cmd.reasonCode, source: cmd.source ?? "executor", why: error.why });
      return { result: "rejected", error };
    }
  }
  // A strictly increasing version, so expectedUpdatedAt detects every write even within one clock tick.
  const updatedAt = Math.max(now, row.updated_at + 1e-6);
  const changed = await tx.casStatus(
    kind,
    id,
    { status: from, ...(cmd.expectedUpdatedAt !== undefined ? { updatedAt: cmd.expectedUpdatedAt } : {}) },
    {
      status: to,
      status_reason_code: cmd.reasonCode,
      status_reason_summary: cmd.reasonSummary ?? null,
      status_evidence_refs: json(cmd.evidenceRefs),
      updated_at: updatedAt,
    },
    encodeExtra(cmd.extraFields ?? {}),
  );
  if (changed === 0) {
    const current = (await tx.readStatus(kind, id)) ?? row;
    return { result: "conflict", current, why: "cas_lost" };
  }
  await ctx.hooks?.afterUpdate?.(tx, kind, id);
  // Every applied override is audited (§5), a same-status one too (a late record replacing a sweep's reason, §17).
  if (cmd.override) {
    await audit(tx, ctx, "status_transition_override", kind, id, now, cmd.overrideActor ?? null, cmd.overrideJustification ?? null, { from, to, reason_code: cmd.reasonCode });
  }
  const terminalEvent = from !== to && policy.terminal.has(to) && policy.execution;
  const transitionId = ctx.newId();
  const seq = await tx.insertTransition({
    id: transitionId,
    entity_type: kind,
    entity_id: id,
    previous_status: from,
    status: to,
    reason_code: cmd.reasonCode,
    reason_summary: cmd.reasonSummary ?? null,
    evidence_refs: json(cmd.evidenceRefs),
    source: cmd.source ?? "executor",
    actor: cmd.actor ?? null,
    created_at: now,
    metadata: json(cmd.metadata),
    terminal_event: terminalEvent ? 1 : 0,
    leg_id: kind === "session" ? legAfter(row, cmd.extraFields) : null,
  });
  const transition: AppliedTransition = {
    transitionId,
    seq,
    kind,
    entityId: id,
    previousStatus: from,
    status: to,
    reasonCode: cmd.reasonCode,
    occurredAt: now,
    terminalEvent,
  };
  await v.alsoInTransaction?.(tx, transition);
  return { result: "applied", transition };
}
