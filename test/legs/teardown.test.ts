// Each teardown step of §8.2 alone, and the precedence between them, against a real temporary ledger.

import { describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import type { ArtifactContract } from "../../src/contracts/artifacts.ts";
import type { CompletionEvidence } from "../../src/legs/evidence.ts";
import { processIdentity } from "../../src/host/proc.ts";
import { allocateRun } from "../../src/legs/rundir.ts";
import { legRow, setupNewSession, type LegPlan } from "../../src/legs/setup.ts";
import { runTeardown, TEARDOWN_STEPS } from "../../src/legs/teardown/run.ts";
import { initialState, type LegOutage, type SpoolRequest, type TeardownInput, type TeardownState } from "../../src/legs/teardown/state.ts";
import { LedgerUnavailableError } from "../../src/util/errors.ts";
import {
  applyEscalation,
  applyMissingArtifacts,
  baseReason,
  completionEvidenceGate,
  deferTerminal,
  pushCallbacks,
  reconcileLinkedSession,
  snapshotEndpoints,
  verifyArtifacts,
} from "../../src/legs/teardown/steps.ts";
import { guardedWrite } from "../../src/legs/teardown/write.ts";
import type { Ledger } from "../../src/ledger/ledger.ts";
import { fakeClock, sequentialIds, tempDir, tempLedger } from "../helpers/ledger.ts";
import { describeSqliteOnly } from "../helpers/backends.ts";

const contract = (...entries: [string, string, boolean][]): ArtifactContract => ({
  expected: entries.map(([id, p, required]) => ({ id, path: p, required, description: "", source: "cli" })),
});

const noEvidence: CompletionEvidence = { checked: true, ahead_of_base: false, commits_ahead: 0, dirty: false, base_ref: "main", reason: "0 commits ahead of main; working tree clean" };
const noOpinion: CompletionEvidence = { checked: false, ahead_of_base: null, commits_ahead: null, dirty: null, base_ref: null, reason: "not a git work tree" };

interface Leg {
  ledger: Ledger;
  plan: LegPlan;
  input: (over?: Partial<TeardownInput>) => TeardownInput;
  state: (over?: Partial<TeardownInput>) => TeardownState;
  session: () => Promise<Record<string, any>>;
  leg: () => Promise<Record<string, any>>;
}

async function startedLeg(c: ArtifactContract | null = null): Promise<Leg> {
  const clock = fakeClock();
  const { ledger } = tempLedger({ now: clock.now, newId: sequentialIds() });
  const run = allocateRun({ runsRoot: path.join(tempDir(), "runs") });
  const plan: LegPlan = {
    sessionId: "sess-1",
    branchId: "branch-1",
    legId: "leg-1",
    runId: run.runId,
    run,
    argv: ["true"],
    cwd: "/",
    startedAt: clock.now(),
    supervisor: processIdentity(),
    contract: c,
    invocationId: null,
    linkedSessionId: null,
  };
  await setupNewSession(ledger, plan);
  clock.advance(5);
  const input = (over: Partial<TeardownInput> = {}): TeardownInput => ({
    ledger,
    sessionId: plan.sessionId,
    branchId: plan.branchId,
    legId: plan.legId,
    deferred: false,
    termination: "exited_ok",
    exitCode: 0,
    failure: null,
    contract: c,
    artifactRoot: run.artifactRoot,
    assistantText: "",
    assistantTruncated: false,
    linkedSessionId: null,
    providerExitCodes: [75],
    linkedRetry: { attempts: 3, intervalMs: 1 },
    evidenceCwd: null,
    baseRef: null,
    escalateFile: path.join(run.stateRoot, "escalations.jsonl"),
    nodeMetadata: { leg_id: plan.legId },
    now: clock.now,
    newId: sequentialIds("t"),
    log: () => {},
    checkEvidence: async () => noEvidence,
    afterCommit: [],
    ...over,
  });
  return {
    ledger,
    plan,
    input,
    state: (over) => initialState(input(over)),
    session: async () => (await ledger.backend.getEntity("session", plan.sessionId))!,
    leg: async () => (await ledger.backend.getLeg(plan.legId))!,
  };
}

function writeArtifact(root: string, rel: string, content: string): void {
  fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
  fs.writeFileSync(path.join(root, rel), content);
}

describe("the ten steps, as data", () => {
  test("are in the documented order", () => {
    expect(TEARDOWN_STEPS.map((s) => s.name)).toEqual([
      "deferTerminal",
      "snapshotEndpoints",
      "baseReason",
      "verifyArtifacts",
      "reconcileLinkedSession",
      "applyMissingArtifacts",
      "applyEscalation",
      "completionEvidenceGate",
      "guardedWrite",
      "pushCallbacks",
    ]);
  });
});

describe("step 1: deferTerminal", () => {
  test("a deferred leg writes no session status and emits nothing; only its own row closes", async () => {
    const leg = await startedLeg();
    const emitted: unknown[] = [];
    leg.ledger.onTerminal((e) => emitted.push(e));
    const hooks: unknown[] = [];
    const result = await runTeardown(leg.input({ deferred: true, termination: "timeout", exitCode: 143, afterCommit: [(r) => void hooks.push(r)] }));
    expect(result.persisted).toBe("deferred");
    expect((await leg.session()).status).toBe("running");
    expect(await leg.ledger.backend.listTransitions("session", "sess-1")).toHaveLength(1);
    expect(emitted).toEqual([]);
    expect(hooks).toEqual([]);
    expect(await leg.leg()).toMatchObject({ status: "timed_out", deferred: 1, exit_code: 143 });
  });

  test("a leg that is not deferred goes on", async () => {
    const leg = await startedLeg();
    expect(await deferTerminal(leg.state())).toBeUndefined();
  });
});

describe("step 2: snapshotEndpoints", () => {
  test("takes the end time, the message and the session's status in memory, writing nothing", async () => {
    const leg = await startedLeg();
    const s = leg.state({ assistantText: "hello\n" });
    await snapshotEndpoints(s);
    expect(s.snapshot).toEqual({ status: "running", currentLegId: "leg-1", killRequested: false, firstMsgId: null });
    expect(s.message).toMatchObject({ role: "assistant", content: "hello\n", leg_id: "leg-1" });
    expect(await leg.ledger.backend.listMessages("sess-1")).toEqual([]);
    expect((await leg.leg()).ended_at).toBeNull();
  });
});

describe("step 3: baseReason", () => {
  const cases = [
    ["exited_ok", "completed", "run.completed.ok"],
    ["exited_nonzero", "failed", "run.failed.exit_nonzero"],
    ["own_signal", "failed", "run.failed.exit_nonzero"],
    ["timeout", "timed_out", "run.timed_out.deadline"],
    ["sigint", "aborted", "run.aborted.user"],
    ["sigterm", "cancelled", "run.cancelled.sigterm"],
    ["sighup", "cancelled", "run.cancelled.sigterm"],
    ["spawn_failed", "failed", "run.failed.exception"],
  ] as const;
  for (const [termination, status, reason] of cases) {
    test(`${termination} → ${status} (${reason})`, async () => {
      const leg = await startedLeg();
      const s = leg.state({ termination });
      baseReason(s);
      expect([s.status, s.reasonCode]).toEqual([status, reason]);
    });
  }

  test("SIGTERM after li kill recorded a kill request is a manual kill", async () => {
    const leg = await startedLeg();
    await leg.ledger.backend.transaction((tx) => tx.updateLeg("leg-1", { kill_requested_at: 1 }));
    const s = leg.state({ termination: "sigterm" });
    await snapshotEndpoints(s);
    baseReason(s);
    expect([s.status, s.reasonCode]).toEqual(["cancelled", "run.cancelled.manual_kill"]);
  });
});

describe("step 4: verifyArtifacts", () => {
  test("no contract gives no verification", async () => {
    const s = (await startedLeg()).state();
    verifyArtifacts(s);
    expect(s.verification).toBeNull();
  });

  test("zero-byte files and directories count as missing; a non-empty file is produced", async () => {
    const leg = await startedLeg(contract(["a", "a.txt", true], ["empty", "empty.txt", true], ["dir", "d", true]));
    const root = leg.plan.run.artifactRoot;
    writeArtifact(root, "a.txt", "x");
    writeArtifact(root, "empty.txt", "");
    fs.mkdirSync(path.join(root, "d"));
    const s = leg.state();
    verifyArtifacts(s);
    expect(s.verification!.status).toBe("failed");
    expect(s.verification!.produced.map((p) => p.id)).toEqual(["a"]);
    expect(s.verification!.missing_required.map((m) => m.id)).toEqual(["empty", "dir"]);
  });

  test("a symlink whose real target leaves the artifact root is missing, never produced", async () => {
    const leg = await startedLeg(contract(["out", "out.txt", true]));
    const outside = path.join(tempDir(), "secret.txt");
    fs.writeFileSync(outside, "outside");
    fs.mkdirSync(leg.plan.run.artifactRoot, { recursive: true });
    fs.symlinkSync(outside, path.join(leg.plan.run.artifactRoot, "out.txt"));
    const s = leg.state();
    verifyArtifacts(s);
    expect(s.verification!.missing_required.map((m) => m.id)).toEqual(["out"]);
    expect(s.verification!.produced).toEqual([]);
  });
});

describe("step 5: reconcileLinkedSession", () => {
  async function linked(status: string | null) {
    const leg = await startedLeg();
    if (status !== null) {
      await leg.ledger.createEntity("session", { id: "linked-1" });
      if (status !== "running") await leg.ledger.updateStatus("session", "linked-1", { newStatus: status, reasonCode: status === "completed" ? "run.completed.ok" : "run.failed.exit_nonzero", evidenceRefs: [{ kind: "note", id: "n1" }] });
    }
    const s = leg.state({ termination: "exited_nonzero", exitCode: 75, linkedSessionId: "linked-1" });
    baseReason(s);
    await reconcileLinkedSession(s);
    return s;
  }

  test("a terminal linked session supplies its status and evidence", async () => {
    const s = await linked("completed");
    expect([s.status, s.reasonCode, s.linkedSupplied]).toEqual(["completed", "run.completed.ok", true]);
    expect(s.evidence).toEqual([{ kind: "linked_session", id: "linked-1", status: "completed", reason_code: "run.completed.ok" }, { kind: "note", id: "n1" }]);
  });

  test("a running linked session keeps this one running", async () => {
    const s = await linked("running");
    expect([s.status, s.reasonCode]).toEqual(["running", "session.running.linked_pending"]);
  });

  test("a missing linked session leaves failed, after bounded retries", async () => {
    const s = await linked(null);
    expect([s.status, s.reasonCode]).toEqual(["failed", "run.failed.exit_nonzero"]);
  });

  test("only a provider-failure exit code consults the linked session", async () => {
    const leg = await startedLeg();
    await leg.ledger.createEntity("session", { id: "linked-1" });
    const s = leg.state({ termination: "exited_nonzero", exitCode: 1, linkedSessionId: "linked-1" });
    baseReason(s);
    await reconcileLinkedSession(s);
    expect(s.status).toBe("failed");
  });
});

describe("step 6: applyMissingArtifacts", () => {
  test("a missing required artifact turns completed into failed with the missing entries as evidence", async () => {
    const leg = await startedLeg(contract(["report", "report.md", true]));
    const s = leg.state();
    baseReason(s);
    verifyArtifacts(s);
    applyMissingArtifacts(s);
    expect([s.status, s.reasonCode]).toEqual(["failed", "run.failed.missing_artifact"]);
    expect(s.evidence).toEqual([{ kind: "artifact", id: "report", path: "report.md", required: true }]);
  });

  test("an earlier failure stays primary; the missing artifact is kept in the metadata", async () => {
    const leg = await startedLeg(contract(["report", "report.md", true]));
    const s = leg.state({ termination: "timeout", exitCode: 143 });
    baseReason(s);
    verifyArtifacts(s);
    applyMissingArtifacts(s);
    expect([s.status, s.reasonCode]).toEqual(["timed_out", "run.timed_out.deadline"]);
    expect(s.metadata).toMatchObject({ artifact_verification_status: "failed", missing_required_artifact_ids: ["report"] });
  });

  test("missing optional artifacts never change the status", async () => {
    const leg = await startedLeg(contract(["notes", "notes.md", false]));
    const s = leg.state();
    baseReason(s);
    verifyArtifacts(s);
    applyMissingArtifacts(s);
    expect(s.status).toBe("completed");
    expect(s.verification!.status).toBe("warning");
  });
});

describe("step 7: applyEscalation", () => {
  test("escalation entries turn completed into failed (run.failed.escalated)", async () => {
    const leg = await startedLeg();
    const s = leg.state();
    fs.writeFileSync(s.escalateFile, '{"reason": "needs a human"}\nnot json\n');
    baseReason(s);
    applyEscalation(s);
    expect([s.status, s.reasonCode]).toEqual(["failed", "run.failed.escalated"]);
    expect(s.evidence).toEqual([{ kind: "escalation", reason: "needs a human" }, { kind: "escalation", text: "not json" }]);
  });

  test("an earlier failure stays primary over an escalation", async () => {
    const leg = await startedLeg(contract(["report", "report.md", true]));
    const s = leg.state();
    fs.writeFileSync(s.escalateFile, '{"reason": "x"}\n');
    baseReason(s);
    verifyArtifacts(s);
    applyMissingArtifacts(s);
    applyEscalation(s);
    expect(s.reasonCode).toBe("run.failed.missing_artifact");
    expect(s.metadata.escalations).toEqual([{ reason: "x" }]);
  });
});

describe("step 8: completionEvidenceGate", () => {
  test("a checked completion with no evidence becomes completed_empty", async () => {
    const s = (await startedLeg()).state({ evidenceCwd: "/w" });
    baseReason(s);
    await completionEvidenceGate(s);
    expect([s.status, s.reasonCode]).toEqual(["completed_empty", "run.completed_empty.no_evidence"]);
    expect(s.evidence[0]).toMatchObject({ kind: "completion_evidence", base_ref: "main", commits_ahead: 0, dirty: false });
  });

  test("no opinion never demotes", async () => {
    const s = (await startedLeg()).state({ evidenceCwd: "/w", checkEvidence: async () => noOpinion });
    baseReason(s);
    await completionEvidenceGate(s);
    expect(s.status).toBe("completed");
  });

  test("without a workspace the gate does not run", async () => {
    let called = false;
    const s = (await startedLeg()).state({ evidenceCwd: null, checkEvidence: async () => ((called = true), noEvidence) });
    baseReason(s);
    await completionEvidenceGate(s);
    expect([s.status, called]).toEqual(["completed", false]);
  });

  test("a non-empty assistant message is evidence", async () => {
    const s = (await startedLeg()).state({ evidenceCwd: "/w", assistantText: "done: fixed it\n" });
    baseReason(s);
    await completionEvidenceGate(s);
    expect(s.status).toBe("completed");
  });

  test("a produced artifact skips the gate", async () => {
    const leg = await startedLeg(contract(["a", "a.txt", true]));
    writeArtifact(leg.plan.run.artifactRoot, "a.txt", "x");
    const s = leg.state({ evidenceCwd: "/w" });
    baseReason(s);
    verifyArtifacts(s);
    await completionEvidenceGate(s);
    expect(s.status).toBe("completed");
  });

  test("escalation is applied before the gate, so it is never hidden behind completed_empty", async () => {
    const leg = await startedLeg();
    const input = leg.input({ evidenceCwd: "/w" });
    fs.writeFileSync(input.escalateFile, '{"reason": "stuck"}\n');
    const result = await runTeardown(input);
    expect([result.status, result.reasonCode]).toEqual(["failed", "run.failed.escalated"]);
  });
});

describe("step 9: guardedWrite", () => {
  test("one write carries status, end time, exit code, verification and markers, and closes the leg row", async () => {
    const leg = await startedLeg(contract(["a", "a.txt", false]));
    const result = await runTeardown(leg.input({ assistantText: "hi\n", exitCode: 0 }));
    expect(result.persisted).toBe("written");
    const s = await leg.session();
    expect([s.status, s.exit_code, s.ended_at]).toEqual(["completed", 0, 1_800_000_005]);
    expect(JSON.parse(s.artifact_verification_json).status).toBe("warning");
    expect(JSON.parse(s.node_metadata)).toMatchObject({ leg_id: "leg-1", run_id: leg.plan.runId });
    const row = await leg.leg();
    expect(row).toMatchObject({ status: "completed", exit_code: 0, ended_at: 1_800_000_005 });
    const [message] = await leg.ledger.backend.listMessages("sess-1");
    expect([row.first_msg_id, row.last_msg_id]).toEqual([message!.id, message!.id]);
    const history = await leg.ledger.backend.listTransitions("session", "sess-1");
    expect(history.map((h) => [h.previous_status, h.status])).toEqual([[null, "running"], ["running", "completed"]]);
  });

  test("a terminal snapshot is not overwritten: only the leg row closes and the winner is reported", async () => {
    const leg = await startedLeg();
    await leg.ledger.updateStatus("session", "sess-1", { newStatus: "cancelled", reasonCode: "run.cancelled.manual_kill" });
    const result = await runTeardown(leg.input());
    expect([result.status, result.reasonCode, result.persisted]).toEqual(["cancelled", "run.cancelled.manual_kill", "winner"]);
    expect(result.own.status).toBe("completed");
    expect((await leg.session()).ended_at).toBeNull();
    expect(await leg.leg()).toMatchObject({ status: "completed" });
    expect(await leg.ledger.backend.listTransitions("session", "sess-1")).toHaveLength(2);
  });

  test("a leg that is no longer current writes only its own row and reports its own outcome", async () => {
    const leg = await startedLeg();
    await leg.ledger.backend.transaction((tx) => tx.insertLeg({ ...legRow({ ...leg.plan, legId: "leg-2", runId: "other-run" }, 2) }));
    await leg.ledger.updateStatus("session", "sess-1", { newStatus: "running", reasonCode: "run.started.ok", extraFields: { current_leg_id: "leg-2" } });
    const result = await runTeardown(leg.input({ termination: "exited_nonzero", exitCode: 2 }));
    expect([result.status, result.persisted]).toEqual(["failed", "skipped"]);
    expect((await leg.session()).status).toBe("running");
    expect(await leg.leg()).toMatchObject({ status: "failed", exit_code: 2 });
  });

  test("a write that loses the race after the snapshot reports the persisted winner", async () => {
    const leg = await startedLeg();
    const s = leg.state();
    await snapshotEndpoints(s);
    baseReason(s);
    await leg.ledger.updateStatus("session", "sess-1", { newStatus: "failed", reasonCode: "session.phantom.process_dead" });
    await guardedWrite(s);
    expect([s.result!.status, s.result!.persisted]).toEqual(["failed", "winner"]);
    expect((await leg.session()).status_reason_code).toBe("session.phantom.process_dead");
    expect((await leg.leg()).ended_at).not.toBeNull();
  });

  test("a resume that takes over between the snapshot and the write is seen under the write lock: only this leg's row closes", async () => {
    const leg = await startedLeg();
    const s = leg.state();
    await snapshotEndpoints(s);
    baseReason(s);
    await leg.ledger.backend.transaction((tx) => tx.insertLeg({ ...legRow({ ...leg.plan, legId: "leg-2", runId: "other-run" }, 2) }));
    await leg.ledger.updateStatus("session", "sess-1", { newStatus: "running", reasonCode: "run.started.ok", extraFields: { current_leg_id: "leg-2" } });
    await guardedWrite(s);
    expect([s.result!.status, s.result!.persisted]).toEqual(["completed", "skipped"]);
    const session = await leg.session();
    expect([session.status, session.current_leg_id, session.ended_at]).toEqual(["running", "leg-2", null]);
    expect(await leg.leg()).toMatchObject({ status: "completed", exit_code: 0 });
    expect((await leg.leg()).ended_at).not.toBeNull();
    expect((await leg.ledger.backend.listTransitions("session", "sess-1")).map((h) => h.status)).toEqual(["running", "running"]);
  });

  test("without a ledger nothing is written and the in-memory status is returned", async () => {
    const leg = await startedLeg();
    const result = await runTeardown(leg.input({ ledger: null, termination: "exited_nonzero", exitCode: 4 }));
    expect([result.status, result.persisted]).toEqual(["failed", "none"]);
    expect((await leg.session()).status).toBe("running");
  });
});

describe("step 10 and failures", () => {
  test("after-commit hooks run after the write and see the result; terminal listeners get the event", async () => {
    const leg = await startedLeg();
    const seen: string[] = [];
    leg.ledger.onTerminal((e) => seen.push(`event:${e.status}`));
    await runTeardown(leg.input({ afterCommit: [async (r) => void seen.push(`hook:${r.status}:${r.persisted}`)] }));
    expect(seen).toEqual(["event:completed", "hook:completed:written"]);
  });

  test("pushCallbacks alone: a failing hook is logged and the next one still runs; with no result nothing is pushed", async () => {
    const leg = await startedLeg();
    const seen: string[] = [];
    const logged: string[] = [];
    const hooks = [
      () => {
        throw new Error("receiver down");
      },
      (r: { status: string }) => void seen.push(r.status),
    ];
    const idle = leg.state({ afterCommit: hooks, log: (l) => void logged.push(l) });
    await pushCallbacks(idle);
    expect([seen, logged]).toEqual([[], []]);
    const done = leg.state({ afterCommit: hooks, log: (l) => void logged.push(l) });
    done.result = { status: "failed", reasonCode: "run.failed.exit_nonzero", persisted: "written", own: { status: "failed", reasonCode: "run.failed.exit_nonzero" }, exitCode: 1, transition: null };
    await pushCallbacks(done);
    expect(seen).toEqual(["failed"]);
    expect(logged).toEqual(["after-commit hook failed: receiver down"]);
  });

  test("a failure inside teardown is logged and the in-memory status is returned", async () => {
    const leg = await startedLeg();
    const logged: string[] = [];
    const result = await runTeardown(leg.input({ termination: "exited_nonzero", exitCode: 3, log: (l) => void logged.push(l) }), [
      ...TEARDOWN_STEPS.slice(0, 3),
      { name: "explode", run: () => { throw new Error("boom"); } },
      ...TEARDOWN_STEPS.slice(3),
    ]);
    expect([result.status, result.persisted]).toEqual(["failed", "failed"]);
    expect(logged).toEqual(["teardown step explode failed: boom"]);
  });
});

describeSqliteOnly("sqlite-errors")("a ledger that fails during teardown", () => {
  /** Caps the ledger at its current size: the next write that needs a page fails with SQLITE_FULL. */
  function fillLedger(ledger: Ledger): void {
    const db = (ledger.backend as unknown as { db: import("bun:sqlite").Database }).db;
    db.run(`PRAGMA max_page_count = ${db.query<{ page_count: number }, []>("PRAGMA page_count").get()!.page_count}`);
  }

  test("a full ledger at the final write: the outcome is computed, reported unrecorded with the ledger's error, and nothing is pushed", async () => {
    const leg = await startedLeg();
    fillLedger(leg.ledger);
    const pushed: unknown[] = [];
    const logged: string[] = [];
    // A long assistant message makes the final write need new pages.
    const result = await runTeardown(leg.input({ assistantText: "x".repeat(200_000), afterCommit: [(r) => void pushed.push(r)], log: (l) => void logged.push(l) }));
    expect(result).toMatchObject({ status: "completed", reasonCode: "run.completed.ok", persisted: "unrecorded", exitCode: 0 });
    expect(result.ledgerError).toMatchObject({ path: leg.ledger.location, unreachable: true });
    expect(result.ledgerError!.message).toContain("disk full");
    expect(pushed).toEqual([]);
    expect(logged).toEqual([]);
    expect((await leg.session()).status).toBe("running");
    expect((await leg.leg()).ended_at).toBeNull();
  });

  test("a ledger that fails at the first read: the steps still compute the leg's own outcome (not run.failed.exception)", async () => {
    const leg = await startedLeg();
    const failing = { ...TEARDOWN_STEPS[1]!, run: async () => leg.ledger.backend.transaction(() => { throw Object.assign(new Error("disk I/O error"), { code: "SQLITE_IOERR_READ" }); }) };
    const steps = TEARDOWN_STEPS.map((s, i) => (i === 1 ? failing : s));
    const result = await runTeardown(leg.input({ termination: "exited_nonzero", exitCode: 4 }), steps);
    expect(result).toMatchObject({ status: "failed", reasonCode: "run.failed.exit_nonzero", persisted: "unrecorded", exitCode: 4 });
    expect(result.ledgerError!.message).toStartWith(`ledger ${leg.ledger.location}: I/O error`);
  });
});

describe("an unreachable ledger during teardown (§17)", () => {
  /** A ledger error of the kind a dropped connection gives: unreachable, retried. */
  const dropped = (leg: Leg) => new LedgerUnavailableError(leg.ledger.location, "connection closed", { unreachable: true });

  /** An outage plan on a fake clock: each backoff pause moves the clock, nothing sleeps; spooled entries are kept. */
  function outagePlan(retrySeconds: number) {
    let ms = 0;
    const spooled: SpoolRequest[] = [];
    const outage: LegOutage = {
      retrySeconds,
      spoolDir: tempDir(),
      hostId: "host-1",
      spool: async (_, request) => {
        spooled.push(request);
        return "/spool/entry.json";
      },
      clockMs: () => ms,
      sleep: async (pause) => void (ms += pause),
    };
    return { outage, spooled };
  }

  /** `method` of the leg's backend fails with `error()` for the next `times` calls (Infinity: for good), then reads again. */
  function failing(leg: Leg, method: "sessionLegState" | "getLeg" | "transaction", times: number, error: () => Error): { calls: () => number } {
    const backend = leg.ledger.backend as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
    const real = backend[method]!.bind(backend);
    let calls = 0;
    backend[method] = async (...args) => {
      if (++calls <= times) throw error();
      return real(...args);
    };
    return { calls: () => calls };
  }

  test("a snapshot that met a dropped connection is read again: a SIGTERM after li kill is recorded as the manual kill it was, not as run.cancelled.sigterm", async () => {
    const leg = await startedLeg();
    await leg.ledger.backend.transaction((tx) => tx.updateLeg("leg-1", { kill_requested_at: 1 }));
    const reads = failing(leg, "sessionLegState", 1, () => dropped(leg));
    const { outage, spooled } = outagePlan(5);
    const logged: string[] = [];
    // Each read of the leg's clock gives a later second, and notes how many snapshot reads had begun by then.
    const clockReads: { at: number; reads: number }[] = [];
    const now = () => {
      const at = 1_800_000_100 + clockReads.length;
      clockReads.push({ at, reads: reads.calls() });
      return at;
    };
    const result = await runTeardown(leg.input({ termination: "sigterm", exitCode: 143, outage, now, log: (l) => void logged.push(l) }));
    expect(result).toMatchObject({ status: "cancelled", reasonCode: "run.cancelled.manual_kill", persisted: "written" });
    expect(await leg.session()).toMatchObject({ status: "cancelled", status_reason_code: "run.cancelled.manual_kill" });
    // The leg's end is the one taken when its command ended, not when the ledger answered again.
    const endedAt = (await leg.session()).ended_at;
    expect((await leg.leg()).ended_at).toBe(endedAt);
    expect(clockReads.find((c) => c.at === endedAt)?.reads).toBe(0);
    expect(JSON.parse(String((await leg.session()).status_evidence_refs))[0]).toMatchObject({ kind: "process", termination: "manual_kill" });
    // The snapshot's read, once more; the write's own read of the session under its lock comes after.
    expect(reads.calls()).toBeGreaterThanOrEqual(2);
    expect(spooled).toEqual([]);
    expect(logged).toEqual([`the ledger is unreachable (ledger ${leg.ledger.location}: connection closed); retrying the final write for up to 5s`]);
  });

  test("a kill request read that failed is read again too (the snapshot's second read)", async () => {
    const leg = await startedLeg();
    await leg.ledger.backend.transaction((tx) => tx.updateLeg("leg-1", { kill_requested_at: 1 }));
    failing(leg, "getLeg", 2, () => dropped(leg));
    const { outage } = outagePlan(5);
    const result = await runTeardown(leg.input({ termination: "sigterm", exitCode: 143, outage }));
    expect(result).toMatchObject({ status: "cancelled", reasonCode: "run.cancelled.manual_kill", persisted: "written" });
  });

  test("a snapshot the ledger never answers within --ledger-retry: the retries end at the budget and the outcome is spooled once", async () => {
    const leg = await startedLeg();
    const reads = failing(leg, "sessionLegState", Infinity, () => dropped(leg));
    const writes = failing(leg, "transaction", Infinity, () => dropped(leg));
    const { outage, spooled } = outagePlan(3);
    const logged: string[] = [];
    const result = await runTeardown(leg.input({ termination: "exited_nonzero", exitCode: 2, outage, log: (l) => void logged.push(l) }));
    expect(result).toMatchObject({ status: "failed", reasonCode: "run.failed.exit_nonzero", persisted: "spooled" });
    expect(spooled).toHaveLength(1);
    // Tried with backoff (0.25 s doubling to 1 s) until the 3 s were spent, then the final write's own last try.
    expect(reads.calls()).toBeGreaterThan(2);
    expect(reads.calls()).toBeLessThan(10);
    expect(writes.calls()).toBe(1);
    expect(logged).toEqual([`the ledger is unreachable (ledger ${leg.ledger.location}: connection closed); retrying the final write for up to 3s`]);
    expect((await leg.leg()).ended_at).toBeNull();
  });

  test("without an outage plan (--ledger-retry 0 or a command with no spool) nothing is retried: the outcome is reported unrecorded", async () => {
    const leg = await startedLeg();
    const reads = failing(leg, "sessionLegState", 1, () => dropped(leg));
    const result = await runTeardown(leg.input({ termination: "exited_ok", exitCode: 0 }));
    expect(result).toMatchObject({ status: "completed", persisted: "unrecorded" });
    expect(reads.calls()).toBe(1);
  });
});
