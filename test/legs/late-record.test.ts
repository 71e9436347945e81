// §17 "a late record beats an inference", end to end with the binary: a leg the reaper wrongly called a
// phantom finishes and its own outcome stands through an audited override; a verdict a person wrote
// is never replaced. Every test ends with the ledger's invariants.

import { describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { li } from "../helpers/cli.ts";
import { ledgerRows } from "../helpers/ledger-rows.ts";
import { RECORD, recorded } from "../notify/helpers.ts";
import { agentHome, spawnLi } from "./agent-harness.ts";
import { expectInvariants, legRecorded, reapWrongly, waitsFor } from "./late-fixtures.ts";

describe("a late record beats an inference (§17)", () => {
  test("a leg wrongly reaped as a phantom finishes: its own outcome stands, with an override audit row naming the reaper's verdict, and its notice fires once with it", async () => {
    const home = agentHome();
    const db = ledgerRows(home.home);
    const go = path.join(home.scratch, "go");
    const notices = path.join(home.scratch, "notices");
    const leg = spawnLi(["agent", "--notify", `${RECORD} ${notices}`, "--", ...waitsFor(go, 0)], home);
    const { session_id: id, id: legId } = await legRecorded(db);
    await reapWrongly(home.home, db, legId);
    expect((await db.all("SELECT status, status_reason_code FROM sessions"))).toEqual([{ status: "failed", status_reason_code: "session.phantom.process_dead" }]);

    fs.writeFileSync(go, "");
    const r = await leg.out;

    expect(r.code).toBe(0);
    expect(r.stderr.trimEnd().split("\n").at(-1)).toBe(`li: completed (run.completed.ok) session ${id} branch ${(await db.all<{ id: string }>("SELECT id FROM branches"))[0]!.id}`);
    expect((await db.all("SELECT status, status_reason_code, exit_code FROM sessions"))).toEqual([{ status: "completed", status_reason_code: "run.completed.ok", exit_code: 0 }]);
    expect((await db.all("SELECT previous_status, status, reason_code, actor FROM status_transitions ORDER BY seq"))).toEqual([
      { previous_status: null, status: "running", reason_code: "run.started.ok", actor: "li agent" },
      { previous_status: "running", status: "failed", reason_code: "session.phantom.process_dead", actor: "li.watch.reaper" },
      { previous_status: "failed", status: "completed", reason_code: "run.completed.ok", actor: "li.late_record" },
    ]);
    const audit = (await db.all<{ actor: string; justification: string; payload: string }>("SELECT actor, justification, payload FROM admin_events WHERE event_type = 'status_transition_override'"));
    expect(audit).toHaveLength(1);
    expect(audit[0]!.actor).toBe("li.late_record");
    expect(audit[0]!.justification).toContain("failed (session.phantom.process_dead)");
    expect(JSON.parse(audit[0]!.payload)).toMatchObject({ from: "failed", to: "completed" });
    // The leg's row carries its own outcome, not the reaper's.
    expect((await db.all("SELECT status, reason_code, exit_code FROM legs"))).toEqual([{ status: "completed", reason_code: "run.completed.ok", exit_code: 0 }]);
    // Pushed once, with the real outcome; the reaper's verdict is no longer owed to the leg's notice.
    expect(recorded(notices).map((l) => l.split(" ").slice(1, 4).join(" "))).toEqual([`completed session ${id}`]);
    expect((await li(["events", "deliver"], { home: home.home })).code).toBe(0);
    expect(recorded(notices)).toHaveLength(1);
    await expectInvariants(db);
  });

  test("a failed leg wrongly reaped as failed: the same status keeps its one notice, and the leg's own reason replaces the inference with an audit row", async () => {
    const home = agentHome();
    const db = ledgerRows(home.home);
    const go = path.join(home.scratch, "go");
    const leg = spawnLi(["agent", "--", ...waitsFor(go, 3)], home);
    const { id: legId } = await legRecorded(db);
    await reapWrongly(home.home, db, legId);
    fs.writeFileSync(go, "");
    const r = await leg.out;

    expect(r.code).toBe(1);
    expect((await db.all("SELECT status, status_reason_code, exit_code FROM sessions"))).toEqual([{ status: "failed", status_reason_code: "run.failed.exit_nonzero", exit_code: 3 }]);
    expect((await db.all("SELECT actor, terminal_event FROM status_transitions ORDER BY seq")).slice(1)).toEqual([
      { actor: "li.watch.reaper", terminal_event: 1 },
      { actor: "li.late_record", terminal_event: 0 },
    ]);
    expect((await db.all<{ justification: string }>("SELECT justification FROM admin_events WHERE event_type = 'status_transition_override'"))[0]!.justification).toContain("failed (session.phantom.process_dead)");
    await expectInvariants(db);
  });

  test("a session a person set with li state set-status is never replaced, even with an inferred reason code", async () => {
    const home = agentHome();
    const db = ledgerRows(home.home);
    const go = path.join(home.scratch, "go");
    const notices = path.join(home.scratch, "notices");
    const leg = spawnLi(["agent", "--notify", `${RECORD} ${notices}`, "--", ...waitsFor(go, 0)], home);
    const { session_id: id } = await legRecorded(db);
    const set = await li(["state", "set-status", "session", id, "--status", "failed", "--reason", "session.phantom.process_dead"], { home: home.home });
    expect(set.code).toBe(0);

    fs.writeFileSync(go, "");
    const r = await leg.out;

    // li reports, and exits by, the persisted winner.
    expect(r.code).toBe(1);
    expect((await db.all("SELECT status, status_reason_code FROM sessions"))).toEqual([{ status: "failed", status_reason_code: "session.phantom.process_dead" }]);
    expect((await db.all("SELECT actor FROM status_transitions WHERE actor = 'li.late_record'"))).toEqual([]);
    expect((await db.all("SELECT COUNT(*) AS n FROM admin_events WHERE event_type = 'status_transition_override'"))).toEqual([{ n: 0 }]);
    // The leg's row still closes with its own outcome.
    expect((await db.all("SELECT status, reason_code FROM legs"))).toEqual([{ status: "completed", reason_code: "run.completed.ok" }]);
    await expectInvariants(db);
  });

  test("li kill's verdict is never replaced", async () => {
    const home = agentHome();
    const db = ledgerRows(home.home);
    const leg = spawnLi(["agent", "--", "sh", "-c", "trap '' TERM; sleep 0.5; exit 0"], home);
    const { session_id: id } = await legRecorded(db);
    const killed = await li(["kill", id], { home: home.home });
    expect(killed.code).toBe(0);
    await leg.out;
    expect((await db.all<{ status_reason_code: string }>("SELECT status_reason_code FROM sessions"))[0]!.status_reason_code).toMatch(/^run\.cancelled\.(manual|force)_kill$/);
    expect((await db.all("SELECT actor FROM status_transitions WHERE actor = 'li.late_record'"))).toEqual([]);
    await expectInvariants(db);
  });
});
