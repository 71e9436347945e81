// §17 "a late record beats an inference", end to end with the binary: a leg the reaper wrongly called a
// phantom finishes and its own outcome stands through an audited override; a verdict a person wrote
// is never replaced. Every test ends with the ledger's invariants.

import { describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { li } from "../helpers/cli.ts";
import { ledgerRows } from "../helpers/ledger-rows.ts";
import { until } from "../helpers/until.ts";
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

  test("li kill on a live leg whose command ignores the SIGTERM and then exits 0: the session ends by the kill request, never by a late record", async () => {
    const home = agentHome();
    const db = ledgerRows(home.home);
    const trapping = path.join(home.scratch, "trapping");
    const termed = path.join(home.scratch, "termed");
    const go = path.join(home.scratch, "go");
    // The command notes li's forwarded SIGTERM and carries on; it exits 0 only once told to, so li kill
    // always meets a running leg (a command that exited by itself after a fixed pause could end before
    // li kill read the session on a slow machine, and li kill then refused a completed session).
    const command = `trap 'echo TERM > "$2"' TERM; : > "$1"; while [ ! -e "$3" ]; do sleep 0.02; done; exit 0`;
    const leg = spawnLi(["agent", "--", "sh", "-c", command, "sh", trapping, termed, go], home);
    const { session_id: id } = await legRecorded(db);
    await until("the command to trap SIGTERM", () => fs.existsSync(trapping));
    // A grace no loaded machine reaches: the leg stops itself, so the verdict is the kill request's.
    const killing = li(["kill", id, "--grace", "60"], { home: home.home });
    await until("li's SIGTERM to reach the command", () => fs.existsSync(termed));
    fs.writeFileSync(go, "");
    const [killed, r] = await Promise.all([killing, leg.out]);
    expect({ code: killed.code, stderr: killed.stderr }).toEqual({ code: 0, stderr: "" });
    expect(r.code).toBe(143);
    expect(await db.all("SELECT status, status_reason_code FROM sessions")).toEqual([{ status: "cancelled", status_reason_code: "run.cancelled.manual_kill" }]);
    expect((await db.all("SELECT actor FROM status_transitions WHERE actor = 'li.late_record'"))).toEqual([]);
    await expectInvariants(db);
  });

  test("li kill's verdict written while the leg still runs (its pids judged reused) is never replaced when the leg then ends on its own", async () => {
    const home = agentHome();
    const db = ledgerRows(home.home);
    const go = path.join(home.scratch, "go");
    // No heartbeat: the supervisor is stopped below, and must not be stopped holding a write.
    const leg = spawnLi(["agent", "--", ...waitsFor(go, 0)], home, { env: { LI_TEST_HEARTBEAT_SECONDS: "3600" } });
    const { session_id: id, id: legId } = await legRecorded(db);
    // As reapWrongly does: li kill now judges both pids reused, signals neither and writes its verdict itself.
    await db.run("UPDATE legs SET pid_start_ticks = pid_start_ticks + 1, command_start_ticks = command_start_ticks + 1 WHERE id = ?", legId);
    // Judged dead, the supervisor's leg processes are stopped by li kill (its cgroup or environment, §8.7):
    // the live supervisor, stopped meanwhile, can only notice once li kill has written its verdict.
    leg.proc.kill("SIGSTOP");
    let killed: Awaited<ReturnType<typeof li>>;
    try {
      killed = await li(["kill", id], { home: home.home });
    } finally {
      leg.proc.kill("SIGCONT");
    }
    expect({ code: killed.code, stderr: killed.stderr }).toEqual({ code: 0, stderr: "" });
    expect(await db.all("SELECT status, status_reason_code FROM sessions")).toEqual([{ status: "cancelled", status_reason_code: "run.cancelled.manual_kill" }]);

    fs.writeFileSync(go, "");
    const r = await leg.out;

    // li reports, and exits by, the persisted winner: the kill's verdict, not the leg's own completed.
    expect(r.code).toBe(143);
    expect(await db.all("SELECT status, status_reason_code FROM sessions")).toEqual([{ status: "cancelled", status_reason_code: "run.cancelled.manual_kill" }]);
    expect((await db.all("SELECT actor FROM status_transitions ORDER BY seq")).map((t) => (t as { actor: string }).actor)).toEqual(["li agent", "li.kill"]);
    expect((await db.all("SELECT COUNT(*) AS n FROM admin_events WHERE event_type = 'status_transition_override'"))).toEqual([{ n: 0 }]);
    await expectInvariants(db);
  });
});
