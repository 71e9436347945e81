import { describe, expect, test } from "bun:test";
import { buildPolicy, buildRegistry, ENTITY_KINDS, POLICIES, POLICY_SPECS, PolicyError, reachableStatuses, type PolicySpec } from "../../src/lifecycle/policy.ts";
import { INITIAL_REASONS, REASONS, reasonDomain, reasonRefusal, vocabularyProblems } from "../../src/lifecycle/reasons.ts";

const good: PolicySpec = {
  table: "things",
  statuses: ["open", "done"],
  initial: ["open"],
  terminal: ["done"],
  edges: { open: ["done"] },
  extraFields: ["ended_at"],
  reasonDomains: ["thing"],
  execution: false,
};

describe("the policy registry", () => {
  test("a well-formed policy builds", () => {
    expect(buildPolicy("thing", good).terminal.has("done")).toBe(true);
  });

  test.each([
    ["an edge to an unknown status", { ...good, edges: { open: ["gone"] } }, /edge target/],
    ["an edge from an unknown status", { ...good, edges: { nowhere: ["done"] } }, /edge source/],
    ["a terminal status outside the vocabulary", { ...good, terminal: ["finished"] }, /terminal status 'finished'/],
    ["an initial status outside the vocabulary", { ...good, initial: ["new"] }, /initial status 'new'/],
    ["no initial status", { ...good, initial: [] }, /no initial status/],
    ["a duplicate status", { ...good, statuses: ["open", "open", "done"] }, /duplicate/],
    ["an edge out of a terminal status", { ...good, edges: { open: ["done"], done: ["open"] } }, /out of terminal/],
    ["no reason domain", { ...good, reasonDomains: [] }, /no reason domains/],
    ["a malformed reason domain", { ...good, reasonDomains: ["Thing!"] }, /malformed reason domain/],
    ["status as an extra field", { ...good, extraFields: ["status"] }, /extra field/],
  ] as const)("fails at build on %s", (_name, spec, message) => {
    expect(() => buildPolicy("thing", spec as PolicySpec)).toThrow(PolicyError);
    expect(() => buildPolicy("thing", spec as PolicySpec)).toThrow(message);
  });

  test("a malformed policy anywhere fails the whole registry", () => {
    expect(() => buildRegistry({ ok: good, bad: { ...good, terminal: ["x"] } })).toThrow(PolicyError);
  });

  test("a kind's policy is built once, when first read, and is the same object from then on", () => {
    for (const kind of ENTITY_KINDS) {
      const first = POLICIES[kind];
      expect(POLICIES[kind]).toBe(first);
      expect(first).toEqual(buildPolicy(kind, POLICY_SPECS[kind]));
    }
  });

  test("the registry cannot be changed after it is built", () => {
    expect(Object.isFrozen(POLICIES)).toBe(true);
    expect(Object.isFrozen(POLICIES.session)).toBe(true);
    expect(() => ((POLICIES as Record<string, unknown>).session = null)).toThrow();
    expect(() => (POLICIES.session.terminal as Set<string>).add("running")).toThrow();
    expect(() => (POLICIES.session.edges as Map<string, unknown>).set("completed", new Set())).toThrow();
    expect(POLICIES.session.terminal.has("running")).toBe(false);
    // Every set and map of every policy refuses add/set, delete and clear, and keeps its contents.
    for (const policy of Object.values(POLICIES)) {
      for (const set of [policy.statuses, policy.initial, policy.terminal, policy.extraFields, ...policy.edges.values()] as Set<string>[]) {
        const before = [...set];
        expect(() => set.add("x")).toThrow(TypeError);
        expect(() => set.delete(before[0]!)).toThrow(TypeError);
        expect(() => set.clear()).toThrow(TypeError);
        expect([...set]).toEqual(before);
      }
      const edges = policy.edges as Map<string, ReadonlySet<string>>;
      expect(() => edges.delete([...edges.keys()][0]!)).toThrow(TypeError);
      expect(() => edges.clear()).toThrow(TypeError);
    }
  });

  test("session and invocation share the run vocabulary and its single edge set", () => {
    for (const kind of ["session", "invocation"] as const) {
      expect([...POLICIES[kind].edges.keys()]).toEqual(["running"]);
      expect([...POLICIES[kind].terminal].sort()).toEqual(["aborted", "cancelled", "completed", "completed_empty", "failed", "timed_out"]);
    }
  });

  test("play and show let any non-terminal status move to any other status", () => {
    for (const kind of ["play", "show"] as const) {
      const p = POLICIES[kind];
      for (const from of p.statuses) {
        if (p.terminal.has(from)) expect(p.edges.has(from)).toBe(false);
        else expect(p.edges.get(from)!.size).toBe(p.statuses.size - 1);
      }
    }
  });
});

describe("the reason-code vocabulary", () => {
  test("every status reachable through a declared edge has a code in one of the entity's domains", () => {
    for (const kind of ENTITY_KINDS) {
      const domains = POLICIES[kind].reasonDomains;
      for (const status of reachableStatuses(POLICIES[kind])) {
        const codes = Object.keys(REASONS).filter((c) => domains.includes(reasonDomain(c)) && c.split(".")[1] === status);
        expect({ kind, status, codes: codes.length > 0 }).toEqual({ kind, status, codes: true });
      }
    }
  });

  test("the codes SPEC §4 requires are all registered", () => {
    const required = "run.started.ok run.completed.ok run.completed_empty.no_evidence run.failed.exit_nonzero run.failed.exception run.failed.missing_artifact run.failed.escalated run.failed.orphaned_parent run.failed.spawn_identity_lost run.failed.provider_retryable run.failed.provider_nonretryable run.timed_out.deadline run.aborted.user run.cancelled.sigint run.cancelled.sigterm run.cancelled.system run.cancelled.manual_kill run.cancelled.force_kill run.cancelled.stale_auto session.phantom.process_dead session.stale.no_heartbeat session.orphaned.no_process session.reopened.by_resume schedule.queued.created schedule.fired.due schedule.skipped.precondition play.pending.created play.merged.ok play.blocked.runner_orphaned show.active.created show.completed.final_gate show.aborted.operator team.archived.operator legacy.imported".split(" ");
    for (const code of required) expect(Object.keys(REASONS)).toContain(code);
  });

  test("a code from another entity's domain is refused", () => {
    expect(reasonRefusal("play", "run.completed.ok")).toMatch(/not accepted for play/);
    expect(reasonRefusal("invocation", "session.phantom.process_dead")).toMatch(/not accepted for invocation/);
    expect(reasonRefusal("team", "show.aborted.operator")).toMatch(/not accepted/);
    expect(reasonRefusal("session", "session.phantom.process_dead")).toBeNull();
    expect(reasonRefusal("schedule_run", "run.failed.exit_nonzero")).toBeNull();
  });

  test("an unregistered code is refused, and legacy.imported is accepted everywhere", () => {
    expect(reasonRefusal("session", "run.completed.great")).toMatch(/unknown reason code/);
    for (const kind of ENTITY_KINDS) expect(reasonRefusal(kind, "legacy.imported")).toBeNull();
  });

  test("every code is well formed and every initial status has a valid default reason", () => {
    expect(vocabularyProblems()).toEqual([]);
  });

  test("every initial status has a default creation reason the entity accepts", () => {
    for (const kind of ENTITY_KINDS) {
      for (const status of POLICY_SPECS[kind].initial) expect(reasonRefusal(kind, INITIAL_REASONS[kind][status]!)).toBeNull();
    }
  });
});
