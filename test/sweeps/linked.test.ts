import { describe, expect, test } from "bun:test";
import { deliverOnce } from "../../src/notify/deliver.ts";
import { linkedFinalizer } from "../../src/sweeps/linked.ts";
import { reaper } from "../../src/sweeps/reaper.ts";
import { hostEnv } from "../../src/sweeps/sweep.ts";
import { tempLedger } from "../helpers/ledger.ts";
import { deadPid, insertSession, query, setColumns } from "../helpers/sweep-fixtures.ts";
import { HOST, legRegistration, RECORD, recorded } from "../notify/helpers.ts";
import { join } from "node:path";

const now = () => Date.now() / 1000;

interface Row {
  status: string;
  status_reason_code: string;
  status_evidence_refs: string | null;
  exit_code: number | null;
  ended_at: number | null;
}

/** A session as `li agent` leaves it after step 5: its leg closed (exit 75), itself running for `linked`. */
async function heldSession(ledger: ReturnType<typeof tempLedger>["ledger"], id: string, linked: string) {
  const dead = await deadPid();
  const t = now();
  await insertSession(ledger, {
    id,
    startedAt: t - 600,
    updatedAt: t - 600,
    linkedSessionId: linked,
    legs: [{ id: `${id}-leg`, pid: dead.pid, pidStartTicks: dead.startTicks, startedAt: t - 600, heartbeatAt: t - 590, endedAt: t - 590, status: "failed" }],
  });
  await setColumns(ledger, "legs", `${id}-leg`, { reason_code: "run.failed.exit_nonzero", exit_code: 75 });
  await ledger.transition("session", id, {
    newStatus: "running",
    reasonCode: "session.running.linked_pending",
    evidenceRefs: [{ kind: "linked_session", id: linked, status: "running", reason_code: "run.started.ok" }],
    source: "executor",
    expectedStatuses: ["running"],
  });
}

function setup() {
  const t = tempLedger();
  const row = async (id: string) => (await query<Row>(t.ledger, "SELECT status, status_reason_code, status_evidence_refs, exit_code, ended_at FROM sessions WHERE id = ?", id))[0];
  return { ...t, row };
}

describe("the linked-session finalizer", () => {
  test("a held session takes its linked session's status, reason and evidence once that session ends", async () => {
    const { ledger, row } = setup();
    await ledger.createEntity("session", { id: "linked" });
    await heldSession(ledger, "held", "linked");
    await ledger.updateStatus("session", "linked", { newStatus: "completed", reasonCode: "run.completed.ok", evidenceRefs: [{ kind: "note", id: "n1" }] });

    const summary = await linkedFinalizer.runOnce(ledger, now(), linkedFinalizer.validate({}));

    expect(summary).toMatchObject({ held: 1, finalized: 1, conflicts: 0 });
    const held = (await row("held"))!;
    expect([held.status, held.status_reason_code, held.exit_code]).toEqual(["completed", "run.completed.ok", 75]);
    expect(held.ended_at).not.toBeNull();
    expect(JSON.parse(held.status_evidence_refs!)).toEqual([{ kind: "linked_session", id: "linked", status: "completed", reason_code: "run.completed.ok" }, { kind: "note", id: "n1" }]);
    const last = (await query<{ actor: string; terminal_event: number }>(ledger, "SELECT actor, terminal_event FROM status_transitions WHERE entity_id = 'held' ORDER BY seq DESC LIMIT 1"))[0]!;
    expect(last).toEqual({ actor: "li.watch.linked", terminal_event: 1 });
  });

  test("while the linked session runs, neither the finalizer nor the reaper touches the held session", async () => {
    const { ledger, row } = setup();
    await ledger.createEntity("session", { id: "linked" });
    await heldSession(ledger, "held", "linked");

    const linked = await linkedFinalizer.runOnce(ledger, now(), linkedFinalizer.validate({}));
    const reaped = await reaper.runOnce(ledger, now(), reaper.validate({ phantomGraceSeconds: 0 }));

    expect(linked).toMatchObject({ held: 1, finalized: 0, skipped_running: 1 });
    expect(reaped.swept).toBe(0);
    expect((await row("held"))!.status_reason_code).toBe("session.running.linked_pending");
  });

  test("a linked session that no longer exists leaves the leg's own outcome", async () => {
    const { ledger, row } = setup();
    await heldSession(ledger, "held", "gone");

    const summary = await linkedFinalizer.runOnce(ledger, now(), linkedFinalizer.validate({}));

    expect(summary.finalized).toBe(1);
    const held = (await row("held"))!;
    expect([held.status, held.status_reason_code]).toEqual(["failed", "run.failed.exit_nonzero"]);
    expect(JSON.parse(held.status_evidence_refs!)).toEqual([{ kind: "linked_session", id: "gone", found: false }]);
  });

  test("a linked id nulled by a prune is found again in the hold's evidence", async () => {
    const { ledger, row } = setup();
    await ledger.createEntity("session", { id: "linked" });
    await heldSession(ledger, "held", "linked");
    await ledger.updateStatus("session", "linked", { newStatus: "failed", reasonCode: "run.failed.exit_nonzero" });
    await setColumns(ledger, "sessions", "held", { linked_session_id: null });

    await linkedFinalizer.runOnce(ledger, now(), linkedFinalizer.validate({}));

    expect((await row("held"))!.status).toBe("failed");
  });

  test("a running session with a linked session but no hold (its leg still runs) is left alone", async () => {
    const { ledger, row } = setup();
    await ledger.createEntity("session", { id: "linked", status: "running" });
    await ledger.updateStatus("session", "linked", { newStatus: "completed", reasonCode: "run.completed.ok" });
    const t = now();
    await insertSession(ledger, { id: "normal", startedAt: t, updatedAt: t, linkedSessionId: "linked", legs: [{ id: "l", pid: process.pid, startedAt: t, heartbeatAt: t }] });

    const summary = await linkedFinalizer.runOnce(ledger, now(), linkedFinalizer.validate({}));

    expect(summary).toMatchObject({ held: 0, finalized: 0 });
    expect((await row("normal"))!.status).toBe("running");
  });

  test("a resume that became current between the decision and the write wins: nothing is written", async () => {
    const { ledger, row } = setup();
    await ledger.createEntity("session", { id: "linked" });
    await heldSession(ledger, "held", "linked");
    await ledger.updateStatus("session", "linked", { newStatus: "completed", reasonCode: "run.completed.ok" });
    const env = hostEnv({ hooks: { beforeWrite: async () => await setColumns(ledger, "sessions", "held", { current_leg_id: "a-resumed-leg" }) } });

    const summary = await linkedFinalizer.runOnce(ledger, now(), linkedFinalizer.validate({}), env);

    expect(summary).toMatchObject({ finalized: 0, conflicts: 1 });
    expect(summary.actions[0]!.conflict).toBe("leg_changed");
    expect((await row("held"))!.status).toBe("running");
  });

  test("a dry run reports what it would finalize and writes nothing", async () => {
    const { ledger, row } = setup();
    await ledger.createEntity("session", { id: "linked" });
    await heldSession(ledger, "held", "linked");
    await ledger.updateStatus("session", "linked", { newStatus: "cancelled", reasonCode: "run.cancelled.operator" });

    const summary = await linkedFinalizer.runOnce(ledger, now(), linkedFinalizer.validate({ dryRun: true }));

    expect(summary.actions.map((a) => [a.session_id, a.status, a.applied])).toEqual([["held", "cancelled", false]]);
    expect((await row("held"))!.status).toBe("running");
  });

  test("the held leg's --notify registration is delivered once the finalizer ends the session", async () => {
    const { ledger, home } = setup();
    await ledger.createEntity("session", { id: "linked" });
    await heldSession(ledger, "held", "linked");
    const out = join(home, "notices");
    await legRegistration(ledger, { sessionId: "held", legId: "held-leg", argv: [RECORD, out] });
    await ledger.updateStatus("session", "linked", { newStatus: "completed", reasonCode: "run.completed.ok" });

    await linkedFinalizer.runOnce(ledger, now(), linkedFinalizer.validate({}));
    const pass = await deliverOnce(ledger, { hostId: HOST });

    expect(pass.delivered).toBe(1);
    expect(recorded(out).map((line) => line.split(" ").slice(1, 4).join(" "))).toEqual(["completed session held"]);
  });
});
