// Resume (§10, ADR-0105 D1–D4): the reopen inside the setup transaction, its markers, and sessions that vanish mid-resume.

import { describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import type { Tx } from "../../src/ledger/backend.ts";
import { openLedger } from "../../src/ledger/open.ts";
import { runAgent, type AgentDeps } from "../../src/legs/agent.ts";
import { LegNotifier } from "../../src/legs/notify.ts";
import { processIdentity } from "../../src/host/proc.ts";
import type { AgentRequest } from "../../src/legs/request.ts";
import { resolveResume, setupResume } from "../../src/legs/resume.ts";
import { storedObject } from "../../src/legs/stored-json.ts";
import { allocateRun } from "../../src/legs/rundir.ts";
import { setupNewSession, type LegPlan } from "../../src/legs/setup.ts";
import { SESSION_TERMINAL_STATUSES, type EntityKind } from "../../src/lifecycle/policy.ts";
import { UsageError } from "../../src/util/errors.ts";
import { tempDir, tempLedger, type TempLedger } from "../helpers/ledger.ts";
import { recorded, RECORD } from "../notify/helpers.ts";
import { onPostgres } from "../helpers/backends.ts";
import type { SqlParam } from "../helpers/ledger-rows.ts";

const CLOSING_REASON: Record<string, string> = {
  completed: "run.completed.ok",
  completed_empty: "run.completed_empty.no_evidence",
  failed: "run.failed.exit_nonzero",
  timed_out: "run.timed_out.deadline",
  aborted: "run.aborted.user",
  cancelled: "run.cancelled.sigterm",
};

function planFor(t: { runs: string }, legId: string, ids: { sessionId?: string; branchId?: string } = {}): LegPlan {
  const run = allocateRun({ runsRoot: t.runs });
  return {
    sessionId: ids.sessionId ?? "sess-1",
    branchId: ids.branchId ?? "branch-1",
    legId,
    runId: run.runId,
    run,
    argv: ["true"],
    cwd: "/tmp",
    startedAt: Date.now() / 1000,
    supervisor: processIdentity(),
    contract: null,
    invocationId: null,
    linkedSessionId: null,
  };
}

interface World extends TempLedger {
  runs: string;
  sql<T = Record<string, any>>(query: string, ...params: SqlParam[]): Promise<T[]>;
  exec(query: string, ...params: SqlParam[]): Promise<void>;
}

function world(): World {
  const t = tempLedger();
  const runs = path.join(t.home, "runs");
  fs.mkdirSync(runs, { recursive: true });
  return {
    ...t,
    runs,
    sql: (query, ...params) => t.rows().all(query, ...params),
    exec: async (query, ...params) => void (await t.rows().run(query, ...params)),
  };
}

/** A session that ran one leg and ended with `status`, the way a leg's teardown leaves it. */
async function endedSession(w: World, status: string, extra: { nodeMetadata?: string | null } = {}): Promise<void> {
  await setupNewSession(w.ledger, planFor(w, "leg-1"));
  await w.ledger.updateStatus("session", "sess-1", {
    newStatus: status,
    reasonCode: CLOSING_REASON[status]!,
    expectedStatuses: ["running"],
    extraFields: { ended_at: 1_800_000_100, exit_code: 3, artifact_verification_json: { status: "passed" } },
  });
  await w.ledger.backend.transaction((tx) => tx.updateLeg("leg-1", { ended_at: 1_800_000_100, status }));
  if (extra.nodeMetadata !== undefined) await w.exec("UPDATE sessions SET node_metadata = ? WHERE id = 'sess-1'", extra.nodeMetadata);
}

/** Records every UPDATE of sessions.node_metadata that does not also change the status: a separate marker write. */
async function watchSeparateMarkerWrites(w: World): Promise<() => Promise<string[]>> {
  await w.exec("CREATE TABLE test_marker_writes (session_id TEXT, status TEXT)");
  // A trigger is dialect SQL by nature: the same condition, spelled for each backend.
  if (onPostgres) {
    await w.exec("CREATE FUNCTION test_marker_writes_f() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO test_marker_writes VALUES (NEW.id, NEW.status); RETURN NEW; END $$");
    await w.exec(`CREATE TRIGGER test_marker_writes_t AFTER UPDATE OF node_metadata ON sessions FOR EACH ROW
          WHEN (NEW.node_metadata IS DISTINCT FROM OLD.node_metadata AND NEW.status IS NOT DISTINCT FROM OLD.status)
          EXECUTE FUNCTION test_marker_writes_f()`);
  } else {
    await w.exec(`CREATE TRIGGER test_marker_writes_t AFTER UPDATE OF node_metadata ON sessions
          WHEN NEW.node_metadata IS NOT OLD.node_metadata AND NEW.status IS OLD.status
          BEGIN INSERT INTO test_marker_writes VALUES (NEW.id, NEW.status); END`);
  }
  return async () => (await w.sql<{ session_id: string }>("SELECT session_id FROM test_marker_writes")).map((r) => r.session_id);
}

/** A second real process removes a session the way a prune does (its branch too, unless told to keep it). */
async function removeSessionElsewhere(liHome: string, sessionId: string, keepBranch = false): Promise<void> {
  // env: process.env carries the suite's backend (test/helpers/backends.ts) to the remover.
  const proc = Bun.spawn([process.execPath, path.join(import.meta.dir, "workers/remove-session.ts"), liHome, sessionId, keepBranch ? "keep" : "drop"], { env: process.env, stdout: "ignore", stderr: "pipe" });
  const [code, stderr] = await Promise.all([proc.exited, new Response(proc.stderr).text()]);
  if (code !== 0) throw new Error(`remover failed: ${stderr}`);
}

describe("the reopen (D1)", () => {
  for (const status of SESSION_TERMINAL_STATUSES) {
    test(`a ${status} session is reopened to running by one audited override write, keeping started_at`, async () => {
      const w = world();
      await endedSession(w, status);
      const before = (await w.sql("SELECT started_at FROM sessions"))[0]!;
      expect(await setupResume(w.ledger, planFor(w, "leg-2"), () => "fresh")).toBe("reopened");
      const s = (await w.sql("SELECT * FROM sessions WHERE id = 'sess-1'"))[0]!;
      expect(s).toMatchObject({ status: "running", status_reason_code: "session.reopened.by_resume", ended_at: null, exit_code: null, artifact_verification_json: null, current_leg_id: "leg-2", started_at: before.started_at });
      const history = await w.ledger.backend.listTransitions("session", "sess-1");
      expect(history.map((h) => [h.previous_status, h.status, h.terminal_event])).toEqual([
        [null, "running", 0],
        ["running", status, 1],
        [status, "running", 0],
      ]);
      const admin = await w.ledger.backend.listAdminEvents("session", "sess-1");
      expect(admin.map((a) => [a.event_type, a.actor])).toEqual([["status_transition_override", "cli.resume"]]);
      expect(admin[0]!.justification).toBeTruthy();
      expect((await w.ledger.backend.getLeg("leg-2"))).toMatchObject({ session_id: "sess-1", seq: 2, status: "running", ended_at: null });
    });
  }

  test("a running session is left running: the new leg becomes current without a reopen", async () => {
    const w = world();
    await setupNewSession(w.ledger, planFor(w, "leg-1"));
    expect(await setupResume(w.ledger, planFor(w, "leg-2"), () => "fresh")).toBe("joined");
    expect(await w.sql("SELECT status, current_leg_id FROM sessions")).toEqual([{ status: "running", current_leg_id: "leg-2" }]);
    expect(await w.ledger.backend.listAdminEvents("session", "sess-1")).toEqual([]);
    expect((await w.ledger.backend.listTransitions("session", "sess-1")).map((h) => h.status)).toEqual(["running", "running"]);
    // The older leg's row is untouched: it closes itself at its own teardown.
    expect((await w.ledger.backend.getLeg("leg-1"))!.ended_at).toBeNull();
  });
});

describe("a lost race (D1: the leg proceeds)", () => {
  /** A world whose guarded writes lose their compare-and-set: after each read another writer moves the row to the next status. */
  async function racingWorld(moves: string[]): Promise<World> {
    const w = world();
    await endedSession(w, "completed");
    const afterRead = async (tx: Tx, kind: EntityKind, id: string) => {
      const next = moves.shift();
      if (next === undefined) return;
      const row = (await tx.readStatus(kind, id))!;
      const set = { status: next, status_reason_code: "legacy.imported", status_reason_summary: null, status_evidence_refs: null, updated_at: row.updated_at + 1 };
      await tx.casStatus(kind, id, { status: row.status }, set, {});
    };
    return { ...w, ledger: openLedger(w.paths, { create: false, hooks: { afterRead } }) };
  }

  test("lost once to a writer that made the session running: the new leg joins it", async () => {
    const w = await racingWorld(["running"]);
    expect(await setupResume(w.ledger, planFor(w, "leg-2"), () => "fresh")).toBe("joined");
    expect(await w.sql("SELECT status, current_leg_id FROM sessions")).toEqual([{ status: "running", current_leg_id: "leg-2" }]);
  });

  test("lost twice: the leg row and its registration are written, the session and its markers are not touched", async () => {
    const w = await racingWorld(["failed", "completed"]);
    let registered = false;
    expect(await setupResume(w.ledger, planFor(w, "leg-2"), () => "fresh", () => void (registered = true))).toBe("lost_race");
    expect(registered).toBe(true);
    const s = (await w.sql("SELECT status, current_leg_id, node_metadata FROM sessions"))[0]!;
    expect([s.status, s.current_leg_id]).toEqual(["completed", "leg-1"]);
    expect(JSON.parse(s.node_metadata).leg_id).toBe("leg-1");
    expect((await w.ledger.backend.getLeg("leg-2"))).toMatchObject({ status: "running", seq: 2 });
  });
});

describe("--invocation on a resumed leg", () => {
  test("re-links the session in the reopen's transaction and records it on the reopen's history row", async () => {
    const w = world();
    await endedSession(w, "completed");
    expect((await w.sql("SELECT invocation_id FROM sessions"))[0]!.invocation_id).toBeNull();
    await setupResume(w.ledger, { ...planFor(w, "leg-2"), invocationId: "inv-2" }, () => "fresh");
    expect((await w.sql("SELECT invocation_id FROM sessions"))[0]!.invocation_id).toBe("inv-2");
    const reopen = (await w.ledger.backend.listTransitions("session", "sess-1")).at(-1)!;
    expect(JSON.parse(reopen.metadata!)).toMatchObject({ leg_id: "leg-2", invocation_id: "inv-2" });
  });
});

describe("markers (D1, Verification 3 and 5)", () => {
  test("are merged over unrelated keys and installed by the status write itself", async () => {
    const w = world();
    await endedSession(w, "completed", { nodeMetadata: JSON.stringify({ owner: "review-bot", round: 2, leg_id: "leg-1", command_pid: 4242 }) });
    const separateWrites = await watchSeparateMarkerWrites(w);
    const plan = planFor(w, "leg-2");
    await setupResume(w.ledger, plan, () => "fresh");
    const meta = JSON.parse((await w.sql("SELECT node_metadata FROM sessions"))[0]!.node_metadata);
    expect(meta).toEqual({ owner: "review-bot", round: 2, leg_id: "leg-2", run_id: plan.runId, supervisor_pid: process.pid, supervisor_start_ticks: plan.supervisor.startTicks, boot_id: plan.supervisor.bootId, host_id: plan.supervisor.hostId });
    expect(await separateWrites()).toEqual([]);
  });

  test("the detector of separate writes does catch one (so the test above can fail)", async () => {
    const w = world();
    await endedSession(w, "completed");
    const separateWrites = await watchSeparateMarkerWrites(w);
    await w.exec(`UPDATE sessions SET node_metadata = '{"leg_id":"x"}' WHERE id = 'sess-1'`);
    expect(await separateWrites()).toEqual(["sess-1"]);
  });

  for (const [shape, stored] of [
    ["SQL null", null],
    ["invalid JSON", "{not json"],
    ["a JSON string", JSON.stringify("markers")],
    ["a number", "42"],
    ["a list", "[1,2]"],
  ] as const) {
    test(`node_metadata stored as ${shape} is replaced by an object holding the markers`, async () => {
      const w = world();
      await endedSession(w, "completed", { nodeMetadata: stored });
      expect(await setupResume(w.ledger, planFor(w, "leg-2"), () => "fresh")).toBe("reopened");
      const row = (await w.sql("SELECT status, node_metadata FROM sessions"))[0]!;
      expect(row.status).toBe("running");
      expect(storedObject(row.node_metadata)).toMatchObject({ leg_id: "leg-2", supervisor_pid: process.pid });
    });
  }
});

describe("one setup transaction (§8)", () => {
  test("the reopen, the leg row, current_leg_id and the registration commit together or not at all", async () => {
    const w = world();
    await endedSession(w, "completed");
    const before = await w.dump();
    const failing = () => {
      throw new Error("registration failed");
    };
    await expect(setupResume(w.ledger, planFor(w, "leg-2"), () => "fresh", failing)).rejects.toThrow("registration failed");
    expect(await w.dump()).toEqual(before);
    let seen: unknown = null;
    await setupResume(w.ledger, planFor(w, "leg-2"), () => "fresh", async (tx, ids) => {
      // Inside the same transaction the reopen already applied and the leg row exists.
      seen = { leg: (await tx.getLeg(ids.legId))?.id, current: (await tx.sessionLegState(ids.sessionId))?.current_leg_id };
    });
    expect(seen).toEqual({ leg: "leg-2", current: "leg-2" });
  });
});

describe("resolving the branch", () => {
  test("exact id, then a unique prefix, in the ledger; an unknown one is a usage error", async () => {
    const w = world();
    await setupNewSession(w.ledger, planFor(w, "leg-1", { branchId: "abc-123" }));
    expect((await resolveResume(w.ledger, w.runs, "abc-123")).branchId).toBe("abc-123");
    expect(await resolveResume(w.ledger, w.runs, "abc")).toMatchObject({ branchId: "abc-123", sessionId: "sess-1", from: "ledger" });
    await expect(resolveResume(w.ledger, w.runs, "zzz")).rejects.toBeInstanceOf(UsageError);
  });

  test("an ambiguous prefix is a usage error naming the candidates", async () => {
    const w = world();
    await setupNewSession(w.ledger, planFor(w, "leg-1", { branchId: "abc-1", sessionId: "s1" }));
    await setupNewSession(w.ledger, planFor(w, "leg-2", { branchId: "abc-2", sessionId: "s2" }));
    await expect(resolveResume(w.ledger, w.runs, "abc")).rejects.toThrow(/ambiguous.*branch abc-1, branch abc-2/);
  });

  test("a session id, exact or a unique prefix, names the session's current branch; one matching a session and a branch is refused, listing both", async () => {
    const w = world();
    await setupNewSession(w.ledger, planFor(w, "leg-1", { branchId: "br-77", sessionId: "sess-77" }));
    expect(await resolveResume(w.ledger, w.runs, "sess-77")).toMatchObject({ branchId: "br-77", sessionId: "sess-77", from: "ledger" });
    expect(await resolveResume(w.ledger, w.runs, "sess-7")).toMatchObject({ branchId: "br-77", sessionId: "sess-77" });
    await setupNewSession(w.ledger, planFor(w, "leg-2", { branchId: "sess-7-branch", sessionId: "other" }));
    await expect(resolveResume(w.ledger, w.runs, "sess-7")).rejects.toThrow(/^-r: id prefix 'sess-7' is ambiguous \(.*session sess-77.*branch sess-7-branch|branch sess-7-branch.*session sess-77/);
    await expect(resolveResume(w.ledger, w.runs, "zzz")).rejects.toThrow("-r: no run, session or branch matches 'zzz'");
  });

  test("a branch the ledger no longer holds is found in the run directories' snapshots, with its contract and artifact root", async () => {
    const w = world();
    const dir = path.join(w.runs, "old-run", "branches");
    fs.mkdirSync(dir, { recursive: true });
    const contract = { expected: [{ id: "report", path: "r.md", required: true, description: "", source: "cli" }] };
    fs.writeFileSync(path.join(dir, "gone-branch.json"), JSON.stringify({ branch_id: "gone-branch", artifact_root: "/tmp/arts", contract }));
    expect(await resolveResume(w.ledger, w.runs, "gone")).toEqual({ branchId: "gone-branch", sessionId: null, contract: contract as never, artifactRoot: "/tmp/arts", from: "snapshot" });
  });
});

describe("a session that no longer exists (D1, Verification 6, resume side)", () => {
  async function agentDeps(w: World, out: string, hooks: AgentDeps["resumeHooks"], log: string[]): Promise<AgentDeps> {
    return {
      ledger: w.ledger,
      runsRoot: w.runs,
      workdir: tempDir(),
      io: { stdout: () => {}, stderr: () => {}, log: (line) => log.push(line) },
      env: {},
      stdin: "ignore",
      notifier: await LegNotifier.load({ notifyFlag: `${RECORD} ${out} {status} {session_id}`, settings: null, log: (line) => log.push(line) }),
      ...(hooks ? { resumeHooks: hooks } : {}),
    };
  }
  function request(branch: string): AgentRequest {
    return { argv: ["true"], resumeArgv: null, resume: branch, notify: "x", timeout: null, contract: null, contractWarnings: [], saveDir: undefined, runId: undefined, cwd: null, baseRef: null, invocationId: null, linkedSessionId: null, autoResume: 0, evidenceGate: false, detach: false, persist: true, json: false };
  }

  for (const [when, hooks] of [
    ["between the branch read and the session read", (home: string, keep: boolean) => ({ afterBranchRead: (_b: string, s: string | null) => removeSessionElsewhere(home, s!, keep) })],
    ["between the session read and the reopen write", (home: string, keep: boolean) => ({ afterSessionRead: (s: string) => removeSessionElsewhere(home, s, keep) })],
  ] as const) {
    for (const keep of [false, true]) {
      test(`removed ${when}${keep ? " (branch row kept)" : ""}: the leg runs persisted under a new session for the same branch, and its notice fires`, async () => {
        const w = world();
        await endedSession(w, "completed");
        const out = path.join(w.home, "notices");
        const log: string[] = [];
        const outcome = await runAgent(request("branch-1"), await agentDeps(w, out, hooks(w.liHome, keep), log));
        expect(outcome.result.persisted).toBe("written");
        const sessionId = outcome.plan.sessionId;
        expect(sessionId).not.toBe("sess-1");
        expect(await w.sql("SELECT id, status FROM sessions")).toEqual([{ id: sessionId, status: "completed" }]);
        expect(await w.sql("SELECT id, session_id FROM branches")).toEqual([{ id: "branch-1", session_id: sessionId }]);
        expect(await w.sql("SELECT session_id, status FROM legs")).toEqual([{ session_id: sessionId, status: "completed" }]);
        const lines = recorded(out);
        expect(lines).toHaveLength(1);
        expect(lines[0]).toContain(`completed session ${sessionId} completed ${sessionId}`);
        expect(log.join("\n")).toMatch(/no longer exists|no session any more/);
      });
    }
  }

  test("a session already gone before the read: the branch row alone leads to a new session", async () => {
    const w = world();
    await endedSession(w, "completed");
    await removeSessionElsewhere(w.liHome, "sess-1", true);
    const out = path.join(w.home, "notices");
    const outcome = await runAgent(request("branch-1"), await agentDeps(w, out, undefined, []));
    expect(outcome.result.persisted).toBe("written");
    expect(recorded(out)).toHaveLength(1);
  });
});
