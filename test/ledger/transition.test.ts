import { describe, expect, test } from "bun:test";
import { ENTITY_KINDS, POLICIES, type EntityKind } from "../../src/lifecycle/policy.ts";
import { INITIAL_REASONS, REASONS } from "../../src/lifecycle/reasons.ts";
import type { AppliedTransition } from "../../src/ledger/transition.ts";
import { TransitionRejectedError, TransitionValidationError } from "../../src/ledger/transition.ts";
import { NotFoundError } from "../../src/util/errors.ts";
import type { SqliteBackend } from "../../src/ledger/sqlite/backend.ts";
import { testSqliteOnly } from "../helpers/backends.ts";
import type { SqlParam } from "../helpers/ledger-rows.ts";
import { fakeClock, sequentialIds, tempLedger, type TempLedger } from "../helpers/ledger.ts";

/** A registered code for `status` in one of the kind's domains (falls back to legacy.imported). */
function codeFor(kind: EntityKind, status: string): string {
  const domains = POLICIES[kind].reasonDomains;
  return Object.keys(REASONS).find((c) => domains.includes(c.split(".")[0]!) && c.split(".")[1] === status) ?? "legacy.imported";
}

const countRows = async (t: TempLedger, table: string, where = "1=1", params: SqlParam[] = []) =>
  (await t.rows().get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${table} WHERE ${where}`, ...params))!.n;

/** Creates an entity and, with an audited override, puts it in `status`. */
async function entityIn(t: TempLedger, kind: EntityKind, status: string): Promise<string> {
  const row = await t.ledger.createEntity(kind, {});
  if (row.status !== status) {
    await t.ledger.updateStatus(kind, row.id, { newStatus: status, reasonCode: codeFor(kind, status), override: true, overrideActor: "test", overrideJustification: "matrix setup" });
  }
  return row.id;
}

describe("the transition matrix, generated from the registry", () => {
  for (const kind of ENTITY_KINDS) {
    test(`${kind}: declared edges and appends apply; everything else is rejected and audited, and applies with an override`, async () => {
      const t = tempLedger({ now: fakeClock().now, newId: sequentialIds(kind) });
      const policy = POLICIES[kind];
      for (const from of policy.statuses) {
        for (const to of policy.statuses) {
          const id = await entityIn(t, kind, from);
          const historyBefore = await countRows(t, "status_transitions", "entity_id = ?", [id]);
          const rejectedBefore = await countRows(t, "admin_events", "entity_id = ? AND event_type = 'status_transition_rejected'", [id]);
          const allowed = from === to || (policy.edges.get(from)?.has(to) ?? false);
          const write = () => t.ledger.updateStatus(kind, id, { newStatus: to, reasonCode: codeFor(kind, to) });
          if (allowed) {
            expect(await write()).toBe(true);
            expect((await t.ledger.backend.getEntity(kind, id))!.status).toBe(to);
            expect(await countRows(t, "status_transitions", "entity_id = ?", [id])).toBe(historyBefore + 1);
          } else {
            const error = await write().then(() => null, (e: unknown) => e);
            expect(error).toBeInstanceOf(TransitionRejectedError);
            expect((await t.ledger.backend.getEntity(kind, id))!.status).toBe(from);
            expect(await countRows(t, "status_transitions", "entity_id = ?", [id])).toBe(historyBefore);
            expect(await countRows(t, "admin_events", "entity_id = ? AND event_type = 'status_transition_rejected'", [id])).toBe(rejectedBefore + 1);
            const overrides = await countRows(t, "admin_events", "entity_id = ? AND event_type = 'status_transition_override'", [id]);
            expect(await t.ledger.updateStatus(kind, id, { newStatus: to, reasonCode: codeFor(kind, to), override: true, overrideActor: "ops", overrideJustification: "repair" })).toBe(true);
            expect((await t.ledger.backend.getEntity(kind, id))!.status).toBe(to);
            expect(await countRows(t, "admin_events", "entity_id = ? AND event_type = 'status_transition_override'", [id])).toBe(overrides + 1);
          }
        }
      }
      expect(await t.rows().historyProblems()).toEqual([]);
      t.ledger.close();
    });
  }
});

describe("guards and validation leave the database unchanged", () => {
  const cases: [string, (t: TempLedger, id: string) => Promise<unknown>, unknown][] = [
    ["an expectedStatuses that does not match", (t, id) => t.ledger.updateStatus("invocation", id, { newStatus: "completed", reasonCode: "run.completed.ok", expectedStatuses: ["failed"] }), false],
    ["an expectedStatuses of only null", (t, id) => t.ledger.updateStatus("invocation", id, { newStatus: "completed", reasonCode: "run.completed.ok", expectedStatuses: [null] }), false],
    ["a stale expectedUpdatedAt", (t, id) => t.ledger.updateStatus("invocation", id, { newStatus: "completed", reasonCode: "run.completed.ok", expectedUpdatedAt: 1 }), false],
    ["an extra field outside the allowlist", (t, id) => t.ledger.updateStatus("invocation", id, { newStatus: "completed", reasonCode: "run.completed.ok", extraFields: { exit_code: 0 } }), TransitionValidationError],
    ["an unknown reason code", (t, id) => t.ledger.updateStatus("invocation", id, { newStatus: "completed", reasonCode: "run.completed.bogus" }), TransitionValidationError],
    ["a reason from another domain", (t, id) => t.ledger.updateStatus("invocation", id, { newStatus: "completed", reasonCode: "play.merged.ok" }), TransitionValidationError],
    ["an unknown status", (t, id) => t.ledger.updateStatus("invocation", id, { newStatus: "finished", reasonCode: "run.completed.ok" }), TransitionValidationError],
    ["an unknown source", (t, id) => t.ledger.updateStatus("invocation", id, { newStatus: "completed", reasonCode: "run.completed.ok", source: "martian" as never }), TransitionValidationError],
    ["an unknown kind", (t, id) => t.ledger.updateStatus("widget", id, { newStatus: "completed", reasonCode: "run.completed.ok" }), TransitionValidationError],
    ["an override without an actor", (t, id) => t.ledger.updateStatus("invocation", id, { newStatus: "completed", reasonCode: "run.completed.ok", override: true, overrideJustification: "x" }), TransitionValidationError],
    ["an override without a justification", (t, id) => t.ledger.updateStatus("invocation", id, { newStatus: "completed", reasonCode: "run.completed.ok", override: true, overrideActor: "ops", overrideJustification: "  " }), TransitionValidationError],
    ["a missing entity", (t) => t.ledger.updateStatus("invocation", "no-such-id", { newStatus: "completed", reasonCode: "run.completed.ok" }), NotFoundError],
  ];
  for (const [name, write, expected] of cases) {
    test(name, async () => {
      const t = tempLedger({ now: fakeClock().now });
      const id = (await t.ledger.createEntity("invocation")).id;
      const before = await t.dump();
      const result = await write(t, id).then((v) => v, (e: unknown) => e);
      if (typeof expected === "function") expect(result).toBeInstanceOf(expected as new () => unknown);
      else expect(result).toBe(expected);
      expect(await t.dump()).toEqual(before);
      t.ledger.close();
    });
  }

  // The command's shape is checked before anything is read or written; the message names the field.
  const shapes: [string, Record<string, unknown>, RegExp][] = [
    ["an empty newStatus", { newStatus: "", reasonCode: "run.completed.ok" }, /newStatus: must not be empty/],
    ["a missing reasonCode", { newStatus: "completed" }, /reasonCode: required/],
    ["a field the command does not know", { newStatus: "completed", reasonCode: "run.completed.ok", status: "completed" }, /unknown field 'status'/],
    ["a summary that is not a string", { newStatus: "completed", reasonCode: "run.completed.ok", reasonSummary: 7 }, /reasonSummary: expected a string/],
    ["evidence that is not a list of objects", { newStatus: "completed", reasonCode: "run.completed.ok", evidenceRefs: ["x"] }, /evidenceRefs: expected an array of objects/],
    ["metadata that is an array", { newStatus: "completed", reasonCode: "run.completed.ok", metadata: [] }, /metadata: expected an object/],
    ["an expectedStatuses holding a number", { newStatus: "completed", reasonCode: "run.completed.ok", expectedStatuses: ["running", 3] }, /expectedStatuses: expected an array of statuses or null/],
    ["an expectedUpdatedAt that is not finite", { newStatus: "completed", reasonCode: "run.completed.ok", expectedUpdatedAt: Number.NaN }, /expectedUpdatedAt: expected a finite number/],
    ["an override that is not a boolean", { newStatus: "completed", reasonCode: "run.completed.ok", override: "yes" }, /override: expected a boolean/],
  ];
  for (const [name, command, message] of shapes) {
    test(`${name} is refused before any write, naming the field`, async () => {
      const t = tempLedger({ now: fakeClock().now });
      const id = (await t.ledger.createEntity("invocation")).id;
      const before = await t.dump();
      const error = await t.ledger.updateStatus("invocation", id, command as never).then(() => null, (e: unknown) => e);
      expect(error).toBeInstanceOf(TransitionValidationError);
      expect((error as Error).message).toMatch(message);
      expect(await t.dump()).toEqual(before);
      t.ledger.close();
    });
  }

  test("optional fields given as undefined are absent, and a null actor is accepted", async () => {
    const t = tempLedger();
    const id = (await t.ledger.createEntity("invocation")).id;
    expect(await t.ledger.updateStatus("invocation", id, { newStatus: "completed", reasonCode: "run.completed.ok", reasonSummary: undefined, actor: null })).toBe(true);
    t.ledger.close();
  });

  test("a matching expectedStatuses with null among them applies", async () => {
    const t = tempLedger();
    const id = (await t.ledger.createEntity("invocation")).id;
    expect(await t.ledger.updateStatus("invocation", id, { newStatus: "failed", reasonCode: "run.failed.exception", expectedStatuses: [null, "running"] })).toBe(true);
  });

  test("a current expectedUpdatedAt applies, and every write moves updated_at even within one clock tick", async () => {
    const clock = fakeClock();
    const t = tempLedger({ now: clock.now });
    const id = (await t.ledger.createEntity("play")).id;
    const v1 = (await t.ledger.backend.getEntity("play", id))!.updated_at;
    expect(await t.ledger.updateStatus("play", id, { newStatus: "prepared", reasonCode: "play.prepared.ok", expectedUpdatedAt: v1 })).toBe(true);
    const v2 = (await t.ledger.backend.getEntity("play", id))!.updated_at;
    expect(v2).toBeGreaterThan(v1);
    expect(await t.ledger.updateStatus("play", id, { newStatus: "running", reasonCode: "play.running.started", expectedUpdatedAt: v1 })).toBe(false);
  });

  test("aliases are canonicalized: sessions and run name the session kind, schedule_runs the schedule_run kind", async () => {
    const t = tempLedger();
    const session = (await t.ledger.createEntity("session")).id;
    expect(await t.ledger.updateStatus("run", session, { newStatus: "running", reasonCode: "run.started.ok" })).toBe(true);
    expect(await t.ledger.updateStatus("sessions", session, { newStatus: "completed", reasonCode: "run.completed.ok" })).toBe(true);
    const sr = (await t.ledger.createEntity("schedule_runs")).id;
    expect(await t.ledger.updateStatus("schedule_runs", sr, { newStatus: "running", reasonCode: "schedule.fired.due" })).toBe(true);
    const rows = await t.ledger.backend.listTransitions("session", session);
    expect(rows.map((r) => r.entity_type)).toEqual(["session", "session", "session"]);
  });

  test("allowed extra fields move in the same write as the status", async () => {
    const t = tempLedger({ now: () => 1234.5 });
    const id = (await t.ledger.createEntity("session")).id;
    await t.ledger.updateStatus("session", id, { newStatus: "failed", reasonCode: "run.failed.exit_nonzero", extraFields: { ended_at: 1234.5, exit_code: 3, node_metadata: { pid: 1 } } });
    const row = (await t.ledger.backend.getEntity("session", id))!;
    expect([row.ended_at, row.exit_code, row.node_metadata]).toEqual([1234.5, 3, '{"pid":1}']);
  });
});

describe("compare-and-set and atomicity", () => {
  testSqliteOnly("same-connection-write")("a row changed between the read and the UPDATE makes the UPDATE apply nothing", async () => {
    let backend!: SqliteBackend;
    const t = tempLedger({
      hooks: {
        afterRead(_tx, kind, id) {
          if (kind === "invocation") backend.db.run("UPDATE invocations SET status = 'cancelled' WHERE id = ?", [id]);
        },
      },
    });
    backend = t.ledger.backend as SqliteBackend;
    const id = (await t.ledger.createEntity("invocation")).id;
    const before = await t.dump();
    expect(await t.ledger.updateStatus("invocation", id, { newStatus: "completed", reasonCode: "run.completed.ok" })).toBe(false);
    expect(await t.dump()).toEqual(before);
  });

  test("a failure after the UPDATE and before the history insert leaves the old status", async () => {
    const t = tempLedger({
      hooks: {
        afterUpdate() {
          throw new Error("injected failure");
        },
      },
    });
    const id = (await t.ledger.createEntity("invocation")).id;
    const before = await t.dump();
    await expect(t.ledger.updateStatus("invocation", id, { newStatus: "completed", reasonCode: "run.completed.ok" })).rejects.toThrow("injected failure");
    expect(await t.dump()).toEqual(before);
    expect((await t.ledger.backend.getEntity("invocation", id))!.status).toBe("running");
  });

  test("a rejection commits its audit row and nothing else", async () => {
    const t = tempLedger();
    const id = (await t.ledger.createEntity("team")).id;
    await t.ledger.updateStatus("team", id, { newStatus: "archived", reasonCode: "team.archived.operator" });
    const before = await t.dump();
    await expect(t.ledger.updateStatus("team", id, { newStatus: "active", reasonCode: "team.active.created" })).rejects.toBeInstanceOf(TransitionRejectedError);
    const after = await t.dump();
    expect(after.admin_events!.length).toBe(before.admin_events!.length + 1);
    expect({ ...after, admin_events: [] }).toEqual({ ...before, admin_events: [] });
  });
});

describe("terminal events", () => {
  test("exactly one per applied status-changing write that lands terminal on an execution entity", async () => {
    const t = tempLedger();
    const seen: AppliedTransition[] = [];
    t.ledger.onTerminal((e) => seen.push(e));
    for (const kind of ["session", "invocation"] as const) {
      const id = (await t.ledger.createEntity(kind)).id;
      await t.ledger.updateStatus(kind, id, { newStatus: "completed", reasonCode: "run.completed.ok" });
    }
    const play = (await t.ledger.createEntity("play")).id;
    await t.ledger.updateStatus("play", play, { newStatus: "merged", reasonCode: "play.merged.ok" });
    const sr = (await t.ledger.createEntity("schedule_run", { status: "running" })).id;
    await t.ledger.updateStatus("schedule_run", sr, { newStatus: "timed_out", reasonCode: "run.timed_out.deadline" });
    expect(seen.map((e) => [e.kind, e.status])).toEqual([
      ["session", "completed"],
      ["invocation", "completed"],
      ["play", "merged"],
      ["schedule_run", "timed_out"],
    ]);
    expect(seen.every((e) => e.terminalEvent && e.transitionId.length > 0)).toBe(true);
  });

  test("an audited repair from one terminal status to another is an event", async () => {
    const t = tempLedger();
    const seen: AppliedTransition[] = [];
    const id = (await t.ledger.createEntity("session")).id;
    await t.ledger.updateStatus("session", id, { newStatus: "completed", reasonCode: "run.completed.ok" });
    t.ledger.onTerminal((e) => seen.push(e));
    await t.ledger.updateStatus("session", id, { newStatus: "failed", reasonCode: "run.failed.exception", override: true, overrideActor: "ops", overrideJustification: "it did fail" });
    expect(seen.map((e) => [e.previousStatus, e.status])).toEqual([["completed", "failed"]]);
  });

  test("none for same-status appends, guard conflicts, rejections, non-terminal moves or non-execution kinds", async () => {
    const t = tempLedger();
    const id = (await t.ledger.createEntity("session")).id;
    await t.ledger.updateStatus("session", id, { newStatus: "completed", reasonCode: "run.completed.ok" });
    const show = (await t.ledger.createEntity("show")).id;
    const team = (await t.ledger.createEntity("team")).id;
    const play = (await t.ledger.createEntity("play")).id;
    const seen: AppliedTransition[] = [];
    t.ledger.onTerminal((e) => seen.push(e));
    await t.ledger.updateStatus("session", id, { newStatus: "completed", reasonCode: "run.completed.ok", reasonSummary: "appended" });
    await t.ledger.updateStatus("session", id, { newStatus: "failed", reasonCode: "run.failed.exception", expectedStatuses: ["running"] });
    await t.ledger.updateStatus("session", id, { newStatus: "failed", reasonCode: "run.failed.exception" }).catch(() => undefined);
    await t.ledger.updateStatus("play", play, { newStatus: "running", reasonCode: "play.running.started" });
    await t.ledger.updateStatus("show", show, { newStatus: "completed", reasonCode: "show.completed.final_gate" });
    await t.ledger.updateStatus("team", team, { newStatus: "archived", reasonCode: "team.archived.operator" });
    expect(seen).toEqual([]);
    // The same-status append still wrote its history row.
    expect((await t.ledger.backend.listTransitions("session", id)).length).toBe(3);
  });

  test("a listener that throws never reaches the writer", async () => {
    const t = tempLedger();
    t.ledger.onTerminal(() => {
      throw new Error("listener broke");
    });
    const id = (await t.ledger.createEntity("invocation")).id;
    expect(await t.ledger.updateStatus("invocation", id, { newStatus: "failed", reasonCode: "run.failed.exception" })).toBe(true);
  });

  test("transition seq increases in commit order", async () => {
    const t = tempLedger();
    const id = (await t.ledger.createEntity("play")).id;
    for (const s of ["prepared", "running", "gated", "merged"]) await t.ledger.updateStatus("play", id, { newStatus: s, reasonCode: codeFor("play", s) });
    const seqs = (await t.ledger.backend.listTransitions("play", id)).map((r) => r.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(new Set(seqs).size).toBe(seqs.length);
  });
});

describe("creation", () => {
  test("every kind is created with its initial history row (previous status NULL, initial reason)", async () => {
    const t = tempLedger();
    for (const kind of ENTITY_KINDS) {
      for (const status of POLICIES[kind].initial) {
        const row = await t.ledger.createEntity(kind, { status });
        const history = await t.ledger.backend.listTransitions(kind, row.id);
        expect(history.map((h) => [h.previous_status, h.status, h.reason_code])).toEqual([[null, status, INITIAL_REASONS[kind][status]!]]);
      }
    }
    expect(await t.rows().historyProblems()).toEqual([]);
  });

  test("a status outside the initial set, an unsafe id and a duplicate id are refused with nothing written", async () => {
    const t = tempLedger();
    await t.ledger.createEntity("team", { id: "t1" });
    const before = await t.dump();
    await expect(t.ledger.createEntity("play", { status: "merged" })).rejects.toThrow(/cannot start as 'merged'/);
    await expect(t.ledger.createEntity("play", { id: "../x" })).rejects.toThrow(/not a valid id/);
    await expect(t.ledger.createEntity("team", { id: "t1" })).rejects.toThrow(/already exists/);
    await expect(t.ledger.createEntity("team", { reasonCode: "play.pending.created" })).rejects.toThrow(/not accepted/);
    expect(await t.dump()).toEqual(before);
  });
});
