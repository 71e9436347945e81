import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { fixture } from "../helpers/fixtures.ts";
import { tempDir } from "../helpers/ledger.ts";
import { openLedger } from "../../src/ledger/open.ts";
import { pathsForHome } from "../helpers/backends.ts";
import { ledgerRows } from "../helpers/ledger-rows.ts";
import { reaper } from "../../src/sweeps/reaper.ts";
import { li } from "../helpers/cli.ts";
import { isAlive, signalPid, until, untilGone } from "../helpers/until.ts";

const db = (home: string) => ledgerRows(home);

/** The leg of a detached session once its supervisor has recorded the command's markers (just after li printed the id). */
function legWithCommand(home: string, id: string): Promise<{ pid: number; command_pid: number }> {
  return until(`the command markers of session ${id}`, async () => {
    const leg = (await db(home).get<{ pid: number; command_pid: number | null }>("SELECT pid, command_pid FROM legs WHERE session_id = ?", id));
    return leg?.command_pid != null ? { pid: leg.pid, command_pid: leg.command_pid } : null;
  });
}

describe("li kill (end to end with li agent)", () => {
  test("a detached live leg ends cancelled/run.cancelled.manual_kill within the grace, and its command is gone", async () => {
    const home = tempDir();
    const started = await li(["agent", "--detach", "--", fixture("forever")], { home });
    expect(started.code).toBe(0);
    const id = started.stdout.trim();
    const leg = await legWithCommand(home, id);

    const killed = await li(["kill", id.slice(0, 8)], { home });

    expect(killed.code).toBe(0);
    expect(killed.stdout).toBe(`${id}: cancelled (run.cancelled.manual_kill)\n`);
    const row = (await db(home).get<{ status: string; status_reason_code: string }>("SELECT status, status_reason_code FROM sessions WHERE id = ?", id))!;
    expect(row).toEqual({ status: "cancelled", status_reason_code: "run.cancelled.manual_kill" });
    await untilGone(leg.pid, "the supervisor to be gone");
    await untilGone(leg.command_pid, "the command to be gone");

    const again = await li(["kill", id], { home });
    expect(again.code).toBe(1);
    expect(again.stderr).toBe(`li: session ${id} is already cancelled\n`);
  });

  test("an unknown id exits 2 in the one wording; bad flags exit 2 naming the flag", async () => {
    const home = tempDir();
    await li(["agent", "--", fixture("exit-with"), "0"], { home });
    const unknown = await li(["kill", "nope"], { home });
    expect([unknown.code, unknown.stderr]).toEqual([2, "li: no run, session or branch matches 'nope'\n"]);
    const grace = await li(["kill", "nope", "--grace", "soon"], { home });
    expect(grace.code).toBe(2);
    expect(grace.stderr).toMatch(/--grace/);
    const both = await li(["kill", "x", "--all-stale"], { home });
    expect(both.code).toBe(2);
  });
});

describe("li kill --all-stale, li state doctor, li state prune (end to end)", () => {
  test("each ends with its summary line", async () => {
    const home = tempDir();
    const done = await li(["agent", "--", fixture("exit-with"), "0"], { home });
    expect(done.code).toBe(0);
    const running = await li(["agent", "--detach", "--", fixture("forever")], { home });
    const liveId = running.stdout.trim();
    await legWithCommand(home, liveId);
    // A crashed leg: a running session whose supervisor pid is gone, last seen two days ago.
    const d = db(home);
    const two = Date.now() / 1000 - 2 * 86400;
    const ten = Date.now() / 1000 - 40 * 86400;
    await d.run("UPDATE legs SET heartbeat_at = ?, started_at = ? WHERE session_id = ?", two, two, liveId);
    await d.run("UPDATE sessions SET updated_at = ? WHERE id = ?", two, liveId);
    await d.run("UPDATE sessions SET updated_at = ? WHERE status = 'completed'", ten);

    const dryDoctor = await li(["state", "doctor", "--dry-run"], { home });
    // Its supervisor is alive: the doctor never touches it, however old.
    expect(dryDoctor.stdout).toBe("running=1, swept=0 → aborted, skipped_recent=0, skipped_live=1\n");
    const stale = await li(["kill", "--all-stale", "--dry-run"], { home });
    expect(stale.stdout).toMatch(/^running=1, killed=0 → cancelled, skipped_recent=0, skipped_live=1, skipped_remote=0, skipped_no_markers=0\n$/);
    expect(await li(["state", "doctor", "--new-status", "completed"], { home })).toMatchObject({ code: 2, stdout: "", stderr: 'li: --new-status: "completed" is not one of aborted, failed\n' });

    const dryPrune = await li(["state", "prune", "--dry-run"], { home });
    expect(dryPrune.code).toBe(0);
    expect(dryPrune.stdout).toMatch(/^pruned sessions=1 transitions=2 legs=1 skipped_owed=0\n$/);
    const prune = await li(["state", "prune"], { home });
    expect(prune.stdout).toBe(dryPrune.stdout);
    expect((await li(["state", "prune"], { home })).stdout).toBe("pruned sessions=0 transitions=0 legs=0 skipped_owed=0\n");
    expect((await li(["state", "prune", "--keep-days", "-3"], { home })).code).toBe(2);

    expect((await li(["kill", liveId], { home })).code).toBe(0);
    expect(await db(home).exists()).toBe(true);
  });
});

describe("stray arguments", () => {
  test("li kill, state doctor, state prune and watch refuse a word they do not take: exit 2 naming it, the ledger unchanged", async () => {
    const home = tempDir();
    await li(["agent", "--", fixture("exit-with"), "0"], { home });
    // No heartbeat while the test runs: a beat (every 15 s) landing between the two dumps below changes the
    // leg's row, and the ledger would look written to by a refused command.
    const running = (await li(["agent", "--detach", "--", fixture("forever")], { home, env: { LI_TEST_HEARTBEAT_SECONDS: "86400" } })).stdout.trim();
    // Old enough that a prune that ignored the stray word would delete it.
    // The detached supervisor records its command's markers just after it prints the id: let that land first.
    await legWithCommand(home, running);
    const d = db(home);
    await d.run("UPDATE sessions SET updated_at = ? WHERE status = 'completed'", Date.now() / 1000 - 400 * 86400);
    const before = await d.dump();

    for (const [args, word] of [
      [["kill", running, "extra"], "extra"],
      [["state", "doctor", "extra"], "extra"],
      [["state", "prune", "--keep-days", "0", "extra"], "extra"],
      [["watch", "--once", "--prune-keep-days", "1", "extra"], "extra"],
    ] as const) {
      const r = await li([...args], { home });
      expect({ code: r.code, stdout: r.stdout }).toEqual({ code: 2, stdout: "" });
      expect(r.stderr).toBe(`li: ${args[0] === "state" ? `li state ${args[1]} takes no ids` : args[0] === "kill" ? "li kill takes one id" : "li watch takes no arguments"}; unexpected '${word}'\n`);
    }
    expect(await d.dump()).toEqual(before);
    expect((await li(["kill", running], { home })).code).toBe(0);
  });
});

describe("notices around li kill and the prune (end to end)", () => {
  test("li kill on a live leg: cancelled/run.cancelled.manual_kill, and its --notify fires exactly once", async () => {
    const home = tempDir();
    const marks = tempDir();
    const started = await li(["agent", "--detach", "--notify", `touch ${marks}/fired-{status}-{reason}-{event_id}`, "--", fixture("forever")], { home });
    const id = started.stdout.trim();
    const leg = await legWithCommand(home, id);
    expect((await li(["kill", id], { home })).code).toBe(0);
    // The leg pushes after its own commit; once its supervisor is gone nothing else will fire it.
    await untilGone(leg.pid, "the supervisor to be gone");
    const fired = readdirSync(marks);
    expect(fired.length).toBe(1);
    expect(fired[0]).toStartWith("fired-cancelled-run.cancelled.manual_kill-");
  });

  test("a resume that arrives after the prune deleted its session gets a new session, is persisted, and its notice fires", async () => {
    const home = tempDir();
    const marks = tempDir();
    const first = JSON.parse((await li(["agent", "--json", "--", fixture("exit-with"), "0"], { home })).stdout) as { session_id: string; branch_id: string };
    expect((await li(["state", "prune", "--keep-days", "0"], { home })).stdout).toBe("pruned sessions=1 transitions=2 legs=1 skipped_owed=0\n");

    const resumed = await li(["agent", "--json", "-r", first.branch_id, "--notify", `touch ${marks}/fired-{status}-{session_id}`, "--", fixture("exit-with"), "0"], { home });

    expect(resumed.code).toBe(0);
    const record = JSON.parse(resumed.stdout) as { session_id: string; branch_id: string; persisted: boolean };
    expect(record.persisted).toBe(true);
    expect(record.branch_id).toBe(first.branch_id);
    expect(record.session_id).not.toBe(first.session_id);
    const row = (await db(home).get<{ status: string }>("SELECT status FROM sessions WHERE id = ?", record.session_id));
    expect(row?.status).toBe("completed");
    expect(readdirSync(marks)).toEqual([`fired-completed-${record.session_id}`]);
  });

  test("a leg whose command ignores SIGTERM ends run.cancelled.force_kill after the grace, its processes are gone, and the notice fires once", async () => {
    const home = tempDir();
    const marks = tempDir();
    const ready = join(tempDir(), "ready");
    const started = await li(["agent", "--detach", "--notify", `touch ${marks}/fired-{reason}`, "--", fixture("ignore-sigterm"), ready], { home });
    const id = started.stdout.trim();
    const leg = await legWithCommand(home, id);
    // Only once its trap is installed does the command really ignore li kill's SIGTERM.
    await until("the command to ignore SIGTERM", () => existsSync(ready));
    const killed = await li(["kill", "--grace", "0.5", id], { home });
    expect(killed.code).toBe(0);
    expect(killed.stdout).toBe(`${id}: cancelled (run.cancelled.force_kill)\n`);
    await untilGone(leg.pid, "the supervisor to be gone");
    await untilGone(leg.command_pid, "the command to be gone");
    expect(readdirSync(marks)).toEqual(["fired-run.cancelled.force_kill"]);
  });
});

describe("crash recovery with real processes (the reaper's pass; li watch will schedule the same runOnce)", () => {
  test("kill -9 a leg's li process: the reaper kills the orphaned command and writes failed/session.phantom.process_dead; delivery then runs its --notify", async () => {
    const home = tempDir();
    const marks = tempDir();
    const started = await li(["agent", "--detach", "--notify", `touch ${marks}/fired-{status}-{reason}`, "--", fixture("forever")], { home });
    const id = started.stdout.trim();
    const leg = await legWithCommand(home, id);
    signalPid(leg.pid, "SIGKILL", { what: "the leg's li" });
    await untilGone(leg.pid, "the leg's li to be gone");
    expect(isAlive(leg.command_pid)).toBe(true);

    const ledger = openLedger(pathsForHome(home), { create: false });
    try {
      // Past the phantom grace, by the sweep's clock rather than by sleeping.
      const summary = await reaper.runOnce(ledger, Date.now() / 1000 + 120, reaper.validate({}));
      expect(summary.swept).toBe(1);
    } finally {
      ledger.close();
    }
    await untilGone(leg.command_pid, "the orphaned command to be gone");
    const row = (await db(home).get<{ status: string; status_reason_code: string }>("SELECT status, status_reason_code FROM sessions WHERE id = ?", id));
    expect(row).toEqual({ status: "failed", status_reason_code: "session.phantom.process_dead" });
    // The sweep pushed nothing; durable delivery runs the registration.
    expect(readdirSync(marks)).toEqual([]);
    expect((await li(["events", "deliver"], { home })).code).toBe(0);
    expect(readdirSync(marks)).toEqual(["fired-failed-session.phantom.process_dead"]);
  });
});
