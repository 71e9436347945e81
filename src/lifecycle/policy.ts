// The lifecycle policy registry (SPEC §4): the one place statuses, edges and patch fields are declared.

/** How a policy declares its edges: an explicit map, or "any non-terminal status may move anywhere". */
type EdgeSpec = { readonly [from: string]: readonly string[] } | "any-from-non-terminal";

export interface PolicySpec {
  readonly table: string;
  readonly statuses: readonly string[];
  readonly initial: readonly string[];
  readonly terminal: readonly string[];
  readonly edges: EdgeSpec;
  /** Columns a guarded write may set together with the status (same transaction). */
  readonly extraFields: readonly string[];
  /** Reason-code domains (first segment) this entity accepts. */
  readonly reasonDomains: readonly string[];
  /** Execution entities emit terminal events and fire callbacks (§9). */
  readonly execution: boolean;
}

const RUN_STATUSES = ["running", "completed", "completed_empty", "failed", "timed_out", "aborted", "cancelled"] as const;
const RUN_TERMINAL = RUN_STATUSES.filter((s) => s !== "running");

/** The declarations, as data. Everything else in li derives from this object. */
export const POLICY_SPECS = {
  session: {
    table: "sessions",
    statuses: RUN_STATUSES,
    initial: ["running"],
    terminal: RUN_TERMINAL,
    edges: { running: RUN_TERMINAL },
    // §4's list, plus the message endpoints §8.2 step 9 writes with the final status.
    extraFields: ["ended_at", "node_metadata", "exit_code", "artifacts_path", "artifact_verification_json", "current_leg_id", "host_name", "host_machine", "first_msg_id", "last_msg_id"],
    reasonDomains: ["run", "session"],
    execution: true,
  },
  invocation: {
    table: "invocations",
    statuses: RUN_STATUSES,
    initial: ["running"],
    terminal: RUN_TERMINAL,
    edges: { running: RUN_TERMINAL },
    extraFields: ["ended_at"],
    reasonDomains: ["run"],
    execution: true,
  },
  schedule_run: {
    table: "schedule_runs",
    statuses: ["queued", "waiting_dependency", "running", "retry_wait", "completed", "failed", "timed_out", "skipped", "cancelled"],
    initial: ["queued", "running", "failed", "skipped"],
    terminal: ["completed", "failed", "timed_out", "skipped", "cancelled"],
    edges: {
      queued: ["waiting_dependency", "running", "skipped", "cancelled"],
      // §4 and §19: a dependency that did not succeed skips its dependents straight from waiting_dependency.
      waiting_dependency: ["queued", "skipped", "cancelled"],
      running: ["completed", "failed", "timed_out", "retry_wait", "queued", "cancelled"],
      retry_wait: ["queued", "cancelled"],
    },
    // §4's list, plus what a lease, its leg and a retry's wait move together with the status (§19).
    extraFields: ["ended_at", "exit_code", "invocation_id", "started_at", "leased_by", "lease_expires_at", "attempts", "session_id", "retry_at"],
    reasonDomains: ["run", "schedule"],
    execution: true,
  },
  play: {
    table: "plays",
    statuses: ["pending", "prepared", "running", "running_complete", "gated", "gate_failed", "redoing", "merged", "escalated", "blocked", "aborted_after_finish"],
    initial: ["pending"],
    terminal: ["merged", "escalated", "gate_failed", "blocked", "aborted_after_finish"],
    edges: "any-from-non-terminal",
    extraFields: ["ended_at", "exit_code", "session_id"],
    reasonDomains: ["play"],
    execution: true,
  },
  show: {
    table: "shows",
    statuses: ["active", "imported", "completed", "aborted"],
    initial: ["active", "imported"],
    terminal: ["completed", "aborted"],
    edges: "any-from-non-terminal",
    extraFields: [],
    reasonDomains: ["show"],
    execution: false,
  },
  team: {
    table: "teams",
    statuses: ["active", "archived"],
    initial: ["active"],
    terminal: ["archived"],
    edges: { active: ["archived"] },
    extraFields: [],
    reasonDomains: ["team"],
    execution: false,
  },
} as const satisfies Record<string, PolicySpec>;

export type EntityKind = keyof typeof POLICY_SPECS;
export type StatusOf<K extends EntityKind> = (typeof POLICY_SPECS)[K]["statuses"][number];
export type SessionStatus = StatusOf<"session">;

/** A validated, frozen policy with set-based lookups. */
export interface Policy {
  readonly kind: EntityKind;
  readonly table: string;
  readonly statuses: ReadonlySet<string>;
  readonly initial: ReadonlySet<string>;
  readonly terminal: ReadonlySet<string>;
  /** from → allowed targets (same-status appends are handled by the transition, not listed here). */
  readonly edges: ReadonlyMap<string, ReadonlySet<string>>;
  readonly extraFields: ReadonlySet<string>;
  readonly reasonDomains: readonly string[];
  readonly execution: boolean;
}

export class PolicyError extends Error {
  override readonly name = "PolicyError";
}

const frozen = (): never => {
  throw new TypeError("the lifecycle registry is frozen");
};

/**
 * A Set or Map that refuses changes (Object.freeze alone does not stop Set.add): its own add/set/
 * delete/clear shadow the prototype's. Plain collections rather than subclasses: constructing ~50
 * subclassed Sets at every start-up cost li ~0.3-0.7 ms (every command loads this module).
 */
function seal<T extends Set<unknown> | Map<unknown, unknown>>(collection: T): T {
  Object.defineProperties(collection, { add: { value: frozen }, set: { value: frozen }, delete: { value: frozen }, clear: { value: frozen } });
  return Object.freeze(collection);
}

function freezeSet<T>(values: Iterable<T>): ReadonlySet<T> {
  return seal(new Set(values));
}

/** Builds and validates one policy; a malformed declaration fails here, at start-up. */
export function buildPolicy(kind: string, spec: PolicySpec): Policy {
  const statuses = new Set(spec.statuses);
  if (statuses.size !== spec.statuses.length) throw new PolicyError(`${kind}: duplicate status in vocabulary`);
  if (statuses.size === 0) throw new PolicyError(`${kind}: empty status vocabulary`);
  const mustKnow = (status: string, role: string) => {
    if (!statuses.has(status)) throw new PolicyError(`${kind}: ${role} status '${status}' is not in the vocabulary`);
  };
  spec.initial.forEach((s) => mustKnow(s, "initial"));
  spec.terminal.forEach((s) => mustKnow(s, "terminal"));
  if (spec.initial.length === 0) throw new PolicyError(`${kind}: no initial status`);
  const terminal = new Set(spec.terminal);
  const edges = new Map<string, ReadonlySet<string>>();
  if (spec.edges === "any-from-non-terminal") {
    for (const from of statuses) {
      if (terminal.has(from)) continue;
      edges.set(from, freezeSet([...statuses].filter((to) => to !== from)));
    }
  } else {
    for (const [from, targets] of Object.entries(spec.edges)) {
      mustKnow(from, "edge source");
      if (terminal.has(from)) throw new PolicyError(`${kind}: edge out of terminal status '${from}' (use an override instead)`);
      targets.forEach((to) => mustKnow(to, `edge target (from '${from}')`));
      edges.set(from, freezeSet(targets));
    }
  }
  if (spec.reasonDomains.length === 0) throw new PolicyError(`${kind}: no reason domains`);
  for (const domain of spec.reasonDomains) {
    if (!/^[a-z][a-z_]*$/.test(domain)) throw new PolicyError(`${kind}: malformed reason domain '${domain}'`);
  }
  for (const field of spec.extraFields) {
    if (!/^[a-z][a-z_]*$/.test(field) || field === "status" || field === "id") {
      throw new PolicyError(`${kind}: extra field '${field}' is not allowed`);
    }
  }
  return Object.freeze({
    kind: kind as EntityKind,
    table: spec.table,
    statuses: freezeSet(spec.statuses),
    initial: freezeSet(spec.initial),
    terminal: freezeSet(spec.terminal),
    edges: seal(new Map(edges)) as ReadonlyMap<string, ReadonlySet<string>>,
    extraFields: freezeSet(spec.extraFields),
    reasonDomains: Object.freeze([...spec.reasonDomains]),
    execution: spec.execution,
  });
}

/** Builds every policy at once (the tests' check of the declarations); frozen so nothing can change it. */
export function buildRegistry(specs: Record<string, PolicySpec>): Readonly<Record<string, Policy>> {
  const registry: Record<string, Policy> = {};
  for (const [kind, spec] of Object.entries(specs)) registry[kind] = buildPolicy(kind, spec);
  return Object.freeze(registry);
}

/**
 * The registry, frozen. Each kind's policy is built and validated the first time it is read, so a command
 * pays for the kinds it uses: building all of them cost every command ~0.5 ms of start-up
 * (docs/benchmarks.md). The declarations are constant; test/lifecycle/policy.test.ts builds every one.
 */
export const POLICIES = lazyRegistry(POLICY_SPECS) as Readonly<Record<EntityKind, Policy>>;

function lazyRegistry(specs: Record<string, PolicySpec>): Readonly<Record<string, Policy>> {
  const registry: Record<string, Policy> = {};
  for (const [kind, spec] of Object.entries(specs)) {
    let built: Policy | undefined;
    Object.defineProperty(registry, kind, { enumerable: true, get: () => (built ??= buildPolicy(kind, spec)) });
  }
  return Object.freeze(registry);
}

export const ENTITY_KINDS = Object.freeze(Object.keys(POLICY_SPECS) as EntityKind[]);
export const EXECUTION_KINDS = Object.freeze(ENTITY_KINDS.filter((k) => POLICY_SPECS[k].execution));

/** Kinds `li wait` can wait on (ADR-0064 D2: show and team are not wait targets). */
export const WAITABLE_KINDS = Object.freeze(["session", "invocation", "play", "schedule_run"] as const satisfies readonly EntityKind[]);

/** Entity-type aliases accepted by the transition (§5). */
const ALIASES: Readonly<Record<string, EntityKind>> = Object.freeze({
  sessions: "session",
  run: "session",
  runs: "session",
  invocations: "invocation",
  schedule_runs: "schedule_run",
  "schedule-run": "schedule_run",
  plays: "play",
  shows: "show",
  teams: "team",
});

export function canonicalKind(kind: string): EntityKind | null {
  if (Object.hasOwn(POLICY_SPECS, kind)) return kind as EntityKind;
  return ALIASES[kind] ?? null;
}

export function isTerminal(kind: EntityKind, status: string | null): boolean {
  return status !== null && POLICIES[kind].terminal.has(status);
}

export const SESSION_TERMINAL_STATUSES: readonly string[] = Object.freeze([...POLICY_SPECS.session.terminal]);

/** Success for machine aggregation (ADR-0064 D2/D6). */
export const SUCCESS_STATUS: Readonly<Record<EntityKind, string | null>> = Object.freeze({
  session: "completed",
  invocation: "completed",
  schedule_run: "completed",
  play: "merged",
  show: "completed",
  team: null,
});

/** Every status reachable through a declared edge, per kind (used to check reason coverage). */
export function reachableStatuses(policy: Policy): Set<string> {
  const out = new Set<string>();
  for (const targets of policy.edges.values()) for (const t of targets) out.add(t);
  return out;
}
