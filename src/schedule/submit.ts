// Submitting a scheduled run (SPEC §19): one validated request becomes one `schedule_run` row holding the
// whole leg request, `queued` — or `queued` then `waiting_dependency` in the same transaction when it waits
// for other runs (--after). Everything is checked before the transaction: a refused submit writes nothing.
// `li agent --queue`, the foreground waiter, retries and cron fires all create runs through here.

import * as z from "zod/mini";
import type { Tx } from "../ledger/backend.ts";
import type { Ledger } from "../ledger/ledger.ts";
import { resolveOne, WAIT_LOOKUP_ORDER } from "../ledger/resolve.ts";
import { DEPENDENCY_KINDS, RETRY_BACKOFFS, SOURCES, type DependencyKind, type ScheduleDepRow, type Source } from "../ledger/rows.ts";
import type { AppliedTransition, TransitionContext } from "../ledger/transition.ts";
import { reasonRefusal } from "../lifecycle/reasons.ts";
import { MAX_DURATION_SECONDS } from "../util/duration.ts";
import { UnknownIdError, UsageError } from "../util/errors.ts";
import { assertSafeId, SAFE_ID_PATTERN, MAX_ID_LENGTH } from "../util/ids.ts";
import { moveRun } from "./move.ts";
import { assertQueueName, defaultQueueRow } from "./queues.ts";
import { firstIssue, ScheduledRequestSchema, type ScheduledRequest } from "./request.ts";

const label = z.string().check(z.regex(SAFE_ID_PATTERN, "a label is letters, digits and . _ : - (starting with a letter or digit)"), z.maxLength(MAX_ID_LENGTH));

/** What a submit may carry. Each key maps to the flag a person typed, so a refusal names it. */
export const SubmitSchema = z.strictObject({
  queue: z.string(),
  request: ScheduledRequestSchema,
  after: z._default(z.array(z.string().check(z.trim(), z.minLength(1, "an empty id"))), []),
  needs: z._default(z.array(label), []),
  retries: z._default(z.number().check(z.int("expected a whole number"), z.gte(0, "expected a whole number ≥ 0"), z.lte(1000)), 0),
  retryDelay: z._default(z.number().check(z.gte(0), z.lte(MAX_DURATION_SECONDS)), 0),
  retryBackoff: z._default(z.enum(RETRY_BACKOFFS), "fixed"),
  retryJitter: z._default(z.boolean(), false),
  /** How long a lease lasts without a heartbeat renewing it. */
  leaseSeconds: z.optional(z.number().check(z.positive(), z.lte(MAX_DURATION_SECONDS))),
  /** An explicit id (tests; a cron fire's deterministic id); a random UUID otherwise. */
  id: z.optional(z.string()),
  /** A retry: the attempt this one follows. */
  chain: z.optional(z.strictObject({ parentId: z.string(), depth: z.number().check(z.int(), z.gte(1)) })),
  reasonCode: z.optional(z.string()),
  reasonSummary: z.optional(z.string()),
  evidence: z.optional(z.array(z.record(z.string(), z.unknown()))),
  source: z.optional(z.enum(SOURCES)),
  actor: z.optional(z.string()),
});

export type SubmitInput = z.input<typeof SubmitSchema>;
type Submit = z.output<typeof SubmitSchema>;

/** The flag behind each key, for one-line refusals. */
const FLAG_OF: Record<string, string> = {
  queue: "--queue",
  after: "--after",
  needs: "--needs",
  retries: "--retries",
  retryDelay: "--retry-delay",
  retryBackoff: "--retry-backoff",
  retryJitter: "--retry-jitter",
  leaseSeconds: "--lease",
  request: "the leg request",
};

/** A dependency as resolved before the transaction. */
export interface ResolvedDependency {
  /** As the user typed it. */
  given: string;
  kind: DependencyKind;
  id: string;
}

/** A submit validated and resolved, ready for `writeSubmit` inside a transaction. */
export interface PreparedSubmit {
  id: string;
  input: Submit;
  dependencies: ResolvedDependency[];
}

export interface SubmittedRun {
  id: string;
  queue: string;
  status: "queued" | "waiting_dependency";
  dependencies: ResolvedDependency[];
  transitions: AppliedTransition[];
}

/** Validates and resolves (reads only). Throws UsageError naming the flag; nothing is written. */
export async function prepareSubmit(ledger: Ledger, raw: SubmitInput): Promise<PreparedSubmit> {
  const parsed = SubmitSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const key = String(issue?.path[0] ?? "");
    throw new UsageError(`${FLAG_OF[key] ?? key}: ${firstIssue(parsed.error).replace(/^[^:]*: /, "")}`);
  }
  const input = parsed.data;
  assertQueueName(input.queue);
  if (input.reasonCode !== undefined) {
    const refusal = reasonRefusal("schedule_run", input.reasonCode);
    if (refusal) throw new UsageError(refusal);
  }
  const id = input.id === undefined ? ledger.newId() : assertSafeId(input.id, "--id");
  const ownLegRunId = input.request.options.runId;
  const dependencies: ResolvedDependency[] = [];
  const seen = new Set<string>();
  for (const given of input.after) {
    if (given === id || (ownLegRunId !== undefined && given === ownLegRunId)) throw new UsageError(`--after ${given}: a cycle (the run would wait for itself)`);
    const found = await resolveOne(ledger.backend, given, WAIT_LOOKUP_ORDER).catch((error: unknown) => {
      if (error instanceof UnknownIdError) throw new UnknownIdError(given, "--after");
      if (error instanceof UsageError) throw new UsageError(`--after: ${error.message}`);
      throw error;
    });
    if (!(DEPENDENCY_KINDS as readonly string[]).includes(found.kind)) throw new UsageError(`--after ${given}: a ${found.kind} cannot be waited for`);
    if (seen.has(found.id)) continue;
    seen.add(found.id);
    dependencies.push({ given, kind: found.kind as DependencyKind, id: found.id });
  }
  await refuseCycle(ledger, id, dependencies);
  return { id, input, dependencies };
}

/**
 * A run id given explicitly may already be named as a dependency by other runs (ids are ledger-wide): waiting
 * for any of them would close a loop nobody can leave. Walks the runs' dependency graph from each dependency.
 */
async function refuseCycle(ledger: Ledger, id: string, dependencies: readonly ResolvedDependency[]): Promise<void> {
  const store = ledger.backend.schedule;
  const visited = new Set<string>();
  const stack = dependencies.filter((d) => d.kind === "schedule_run").map((d) => ({ at: d.id, via: d.given }));
  while (stack.length > 0) {
    const { at, via } = stack.pop()!;
    if (at === id) throw new UsageError(`--after ${via}: a cycle (${via} waits, directly or not, for this run)`);
    if (visited.has(at) || visited.size > 10_000) continue;
    visited.add(at);
    for (const dep of await store.dependenciesOf(at)) stack.push({ at: dep.depends_on_id, via });
  }
}

/** The writes of a submit inside an open transaction (a cron fire adds its own rows to the same one). */
export async function writeSubmit(tx: Tx, ledger: Ledger, prepared: PreparedSubmit, ctx: TransitionContext): Promise<SubmittedRun> {
  const { id, input, dependencies } = prepared;
  const now = ledger.now();
  await tx.schedule.ensureQueue(defaultQueueRow(input.queue, now));
  for (const dep of dependencies) {
    // Resolved before the transaction; a dependency pruned since is refused rather than waited for forever.
    if (!(await tx.getEntity(dep.kind, dep.id))) throw new UnknownIdError(dep.given, "--after");
  }
  const create = ledger.prepareCreate("schedule_run", {
    id,
    status: "queued",
    ...(input.reasonCode !== undefined ? { reasonCode: input.reasonCode } : {}),
    ...(input.reasonSummary !== undefined ? { reasonSummary: input.reasonSummary } : {}),
    source: (input.source ?? "executor") as Source,
    actor: input.actor ?? "li agent --queue",
    fields: {
      queue: input.queue,
      request_json: JSON.stringify(input.request satisfies ScheduledRequest),
      needs: input.needs.length > 0 ? JSON.stringify(input.needs) : null,
      retries: input.retries,
      retry_delay: input.retryDelay,
      retry_backoff: input.retryBackoff,
      retry_jitter: input.retryJitter ? 1 : 0,
      ...(input.leaseSeconds !== undefined ? { lease_seconds: input.leaseSeconds } : {}),
      ...(input.chain ? { chain_parent_id: input.chain.parentId, chain_depth: input.chain.depth } : {}),
    },
  });
  const transitions = [await ledger.insertNew(tx, "schedule_run", create)];
  if (dependencies.length === 0) return { id, queue: input.queue, status: "queued", dependencies, transitions };
  await tx.schedule.insertDependencies(dependencies.map((d) => ({ run_id: id, depends_on_kind: d.kind, depends_on_id: d.id, created_at: now }) satisfies ScheduleDepRow));
  const waiting = await moveRun(tx, ctx, id, {
    from: ["queued"],
    to: "waiting_dependency",
    reasonCode: "schedule.waiting_dependency.blocked",
    reasonSummary: `waits for ${dependencies.map((d) => d.id).join(", ")}`,
    evidence: dependencies.map((d) => ({ kind: "dependency", entity: d.kind, id: d.id })),
    source: (input.source ?? "executor") as Source,
    actor: input.actor ?? "li agent --queue",
  });
  if (waiting) transitions.push(waiting);
  return { id, queue: input.queue, status: "waiting_dependency", dependencies, transitions };
}

/** Validates, resolves and records one run in one transaction. */
export async function submitRun(ledger: Ledger, input: SubmitInput): Promise<SubmittedRun> {
  await ledger.ready();
  const prepared = await prepareSubmit(ledger, input);
  return ledger.transact((tx, ctx) => writeSubmit(tx, ledger, prepared, ctx));
}

/**
 * The labels among `needs` that no host taking scheduled runs has offered (li watch records its
 * `watch.labels`): worth a warning at submit, since such a run waits until a host with them appears.
 */
export async function labelsNobodyHas(ledger: Ledger, needs: readonly string[]): Promise<string[]> {
  if (needs.length === 0) return [];
  const offered = new Set<string>();
  for (const host of await ledger.backend.schedule.listHosts()) {
    try {
      for (const l of JSON.parse(host.labels) as unknown[]) if (typeof l === "string") offered.add(l);
    } catch {
      // A row someone else wrote badly offers nothing.
    }
  }
  return needs.filter((n) => !offered.has(n));
}
