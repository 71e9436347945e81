// The ledger service: guarded writes, entity creation and terminal events over one backend.

import { canonicalKind, POLICIES, type EntityKind } from "../lifecycle/policy.ts";
import { INITIAL_REASONS, reasonRefusal } from "../lifecycle/reasons.ts";
import { NotFoundError, UsageError } from "../util/errors.ts";
import { assertSafeId, randomId, type IdFactory } from "../util/ids.ts";
import type { Backend, TransactionOptions, Tx } from "./backend.ts";
import type { EntityRow, Source } from "./rows.ts";
import { TransitionValidationError } from "./errors.ts";
import type { AppliedTransition, TransitionCommand, TransitionContext, TransitionHooks, TransitionOutcome } from "./transition.ts";

/** The write path loads on first write, so read-only commands start fast. */
let transitionModule: Promise<typeof import("./transition.ts")> | undefined;
export const loadTransition = () => (transitionModule ??= import("./transition.ts"));

export type TerminalListener = (event: AppliedTransition) => void;

export interface LedgerOptions {
  now?: () => number;
  newId?: IdFactory;
  hooks?: TransitionHooks;
  /** Where a failing terminal listener is reported (the service never prints; default: stderr). */
  warn?: (line: string) => void;
}

export interface CreateEntityInput {
  id?: string;
  status?: string;
  reasonCode?: string;
  reasonSummary?: string;
  source?: Source;
  actor?: string | null;
  /** Columns of the new row beyond id/status/reason (e.g. `session_id` of a play). */
  fields?: Record<string, unknown>;
}

/** A validated new row, ready for `insertNew` inside a transaction. */
export interface PreparedCreate {
  row: Record<string, unknown>;
  reasonCode: string;
  input: CreateEntityInput;
}

/** Columns `createEntity` accepts in `fields`, per kind. */
const CREATE_FIELDS: Readonly<Record<EntityKind, readonly string[]>> = {
  session: ["invocation_id", "artifacts_path", "artifact_contract_json", "node_metadata", "current_leg_id", "host_name", "host_machine", "linked_session_id", "started_at", "progression_id"],
  invocation: ["started_at"],
  schedule_run: [
    "invocation_id",
    "started_at",
    "queue",
    "request_json",
    "needs",
    "lease_seconds",
    "chain_parent_id",
    "chain_depth",
    "retries",
    "retry_delay",
    "retry_backoff",
    "retry_jitter",
  ],
  play: ["session_id", "started_at"],
  show: [],
  team: [],
};

export class Ledger {
  readonly now: () => number;
  readonly newId: IdFactory;
  private readonly warn: (line: string) => void;
  private readonly listeners = new Set<TerminalListener>();
  private readonly ctx: TransitionContext;

  constructor(
    readonly backend: Backend,
    options: LedgerOptions = {},
  ) {
    // The backend's clock unless one is injected (openLedger hands the injected one to the backend too).
    this.now = options.now ?? (() => backend.now());
    this.newId = options.newId ?? randomId;
    this.warn = options.warn ?? ((line) => console.error(line));
    this.ctx = { now: this.now, newId: this.newId, ...(options.hooks ? { hooks: options.hooks } : {}) };
  }

  get location(): string {
    return this.backend.location;
  }

  /** Resolves once `now()` is the ledger's clock (Backend.ready): await it before a time taken ahead of any query. */
  async ready(): Promise<void> {
    await this.backend.ready?.();
  }

  /** Subscribes to terminal events; listeners run after commit, never inside the transaction. */
  onTerminal(listener: TerminalListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Emits after commit; a listener's failure never reaches the writer. */
  emitTerminal(event: AppliedTransition): void {
    if (!event.terminalEvent) return;
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch (error) {
        this.warn(`li: terminal listener failed: ${(error as Error).message}`);
      }
    }
  }

  /** §5 `update_status`: true when applied, false on a guard conflict; throws on rejection. */
  async updateStatus(entityType: string, id: string, command: TransitionCommand): Promise<boolean> {
    const outcome = await this.transition(entityType, id, command);
    return outcome.result === "applied";
  }

  /** The same write, returning the full outcome (the applied transition, or the conflicting row). */
  async transition(entityType: string, id: string, command: TransitionCommand): Promise<TransitionOutcome> {
    const { validateTransition, applyTransition } = await loadTransition();
    const validated = validateTransition(entityType, command);
    const outcome = await this.backend.transaction(async (tx) => {
      const result = await applyTransition(tx, this.ctx, validated, id);
      // A guard conflict writes nothing; roll back anything a hook may have done.
      if (result.result === "conflict") throw new ConflictSignal(result);
      return result;
    }).catch((error: unknown) => {
      if (error instanceof ConflictSignal) return error.outcome;
      throw error;
    });
    if (outcome.result === "rejected") throw outcome.error; // the audit row is committed by now
    if (outcome.result === "applied") this.emitTerminal(outcome.transition);
    return outcome;
  }

  /** Runs a composite write; `applyTransition` inside it uses this ledger's clock and ids. */
  async transact<T>(fn: (tx: Tx, ctx: TransitionContext) => Promise<T>, options?: TransactionOptions): Promise<T> {
    return this.backend.transaction((tx) => fn(tx, this.ctx), options);
  }

  /** Creates an entity with its initial history row (previous_status NULL) in one transaction. */
  async createEntity(entityType: string, input: CreateEntityInput = {}): Promise<EntityRow> {
    const kind = canonicalKind(entityType);
    if (!kind) throw new TransitionValidationError(`unknown entity kind '${entityType}'`);
    await this.ready();
    const prepared = this.prepareCreate(kind, input);
    const transition = await this.backend.transaction(async (tx) => this.insertNew(tx, kind, prepared));
    this.emitTerminal(transition);
    const row = await this.backend.getEntity(kind, prepared.row.id as string);
    if (!row) throw new NotFoundError(kind, prepared.row.id as string);
    return row;
  }

  /** Validates a creation without touching storage. */
  prepareCreate(kind: EntityKind, input: CreateEntityInput): PreparedCreate {
    const policy = POLICIES[kind];
    const status = input.status ?? [...policy.initial][0]!;
    if (!policy.statuses.has(status)) throw new TransitionValidationError(`'${status}' is not a ${kind} status`);
    if (!policy.initial.has(status)) {
      throw new TransitionValidationError(`a ${kind} cannot start as '${status}' (initial: ${[...policy.initial].join(", ")})`);
    }
    const reasonCode = input.reasonCode ?? INITIAL_REASONS[kind][status]!;
    const refusal = reasonRefusal(kind, reasonCode);
    if (refusal) throw new TransitionValidationError(refusal);
    const id = input.id === undefined ? this.newId() : assertSafeId(input.id, "--id");
    const allowed = CREATE_FIELDS[kind];
    for (const field of Object.keys(input.fields ?? {})) {
      if (!allowed.includes(field)) throw new UsageError(`field '${field}' cannot be set when creating a ${kind}`);
    }
    const now = this.now();
    const row: Record<string, unknown> = {
      ...input.fields,
      id,
      status,
      status_reason_code: reasonCode,
      status_reason_summary: input.reasonSummary ?? null,
      status_evidence_refs: null,
      created_at: now,
      updated_at: now,
    };
    if (kind === "session" && row.started_at === undefined) row.started_at = now;
    if (policy.terminal.has(status)) row.ended_at = now;
    return { row, reasonCode, input };
  }

  /** Inserts a prepared row and its first history row inside an open transaction. */
  async insertNew(tx: Tx, kind: EntityKind, prepared: PreparedCreate): Promise<AppliedTransition> {
    const { row, reasonCode, input } = prepared;
    const id = row.id as string;
    if (await tx.getEntity(kind, id)) throw new UsageError(`${kind} ${id} already exists`);
    await tx.insertEntity(kind, row);
    const policy = POLICIES[kind];
    const status = row.status as string;
    const terminalEvent = policy.execution && policy.terminal.has(status);
    const transitionId = this.newId();
    const now = row.created_at as number;
    const seq = await tx.insertTransition({
      id: transitionId,
      entity_type: kind,
      entity_id: id,
      previous_status: null,
      status,
      reason_code: reasonCode,
      reason_summary: input.reasonSummary ?? null,
      evidence_refs: null,
      source: input.source ?? "executor",
      actor: input.actor ?? null,
      created_at: now,
      metadata: null,
      terminal_event: terminalEvent ? 1 : 0,
      leg_id: kind === "session" ? ((row.current_leg_id as string | null | undefined) ?? null) : null,
    });
    return { transitionId, seq, kind, entityId: id, previousStatus: null, status, reasonCode, occurredAt: now, terminalEvent };
  }

  close(): void {
    this.backend.close();
  }
}

class ConflictSignal extends Error {
  constructor(readonly outcome: TransitionOutcome) {
    super("guard conflict");
  }
}
