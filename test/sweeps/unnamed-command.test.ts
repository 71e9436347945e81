// A leg killed between spawning its command and recording the command's markers (issue 9 item 4b): the reaper
// finds the command by the LI_LEG_RUN_ID in its environment, kills its group, then fails the session.

import { describe, expect, test } from "bun:test";
import { fixture } from "../helpers/fixtures.ts";
import { li } from "../helpers/cli.ts";
import { isAlive, pidFromFile, signalPid, untilExeced, untilGone } from "../helpers/until.ts";
import { readStartTicks } from "../../src/host/proc.ts";
import { earliestStartTicks, findLegCommand } from "../../src/legs/environ-scan.ts";
import type { LedgerRows } from "../helpers/ledger-rows.ts";
import { agentHome, rows, type AgentHome } from "../legs/agent-harness.ts";
import { legAt } from "../legs/leg-at.ts";
import path from "node:path";

/** Moves the leg's clocks back instead of waiting out the phantom grace. */
async function backdate(db: LedgerRows, seconds: number): Promise<void> {
  const at = Date.now() / 1000 - seconds;
  await db.run("UPDATE legs SET started_at = ?, heartbeat_at = ?", at, at);
  await db.run("UPDATE sessions SET updated_at = ?", at);
}

/** The watcher, on a ledger backdated past the phantom grace, kills the command no marker names and fails its session. */
async function reapsIt(home: AgentHome, command: number): Promise<void> {
  // What the kill -9 left: a running session whose leg names no command, and the command still running.
  const [legRow] = await rows<Record<string, any>>(home.db, "SELECT run_id, command_pid, ended_at FROM legs");
  expect(legRow).toMatchObject({ command_pid: null, ended_at: null });
  expect(await rows(home.db, "SELECT status FROM sessions")).toEqual([{ status: "running" }]);
  expect(isAlive(command)).toBe(true);

  await backdate(home.db, 600);
  const watched = await li(["watch", "--once", "--log-format", "json"], { home: home.home });
  expect(watched.code).toBe(0);
  await untilGone(command, "the orphaned command to be killed");
  const [session] = await rows<Record<string, any>>(home.db, "SELECT status, status_reason_code, status_reason_summary, status_evidence_refs FROM sessions");
  expect(session).toMatchObject({ status: "failed", status_reason_code: "session.phantom.process_dead" });
  expect(session!.status_reason_summary).toContain("found by LI_LEG_RUN_ID and killed");
  const killed = (JSON.parse(session!.status_evidence_refs) as Array<Record<string, unknown>>).find((e) => e.kind === "killed");
  expect(killed).toMatchObject({ what: "command_group", found_by: "environ:LI_LEG_RUN_ID", run_id: legRow!.run_id, pgid: command, groups: [{ pgid: command }] });
  const reaps = watched.stdout.split("\n").filter(Boolean).map((l) => JSON.parse(l)).filter((l) => l.action === "reap");
  expect(reaps).toMatchObject([{ status: "failed", reason: "session.phantom.process_dead", applied: true, killed_pgid: command }]);
}

describe("a command no marker names", () => {
  test("li killed right after the spawn: li watch kills the orphaned command (found by LI_LEG_RUN_ID) and fails the session", async () => {
    const home = agentHome();
    const pidFile = path.join(home.scratch, "command.pid");
    const leg = legAt(home, "afterSpawn", "die", [fixture("forever"), pidFile]);
    const r = await leg.out;
    expect(r.signal).toBe("SIGKILL");
    const command = await pidFromFile(pidFile, "the orphaned command's pid");
    try {
      // forever writes its pid before it execs sleep: its environment (what the reaper looks for) is readable after.
      await untilExeced(command, "sleep");
      await reapsIt(home, command);
    } finally {
      // Whatever the outcome, the test leaves no orphan behind (validated before the signal).
      if (isAlive(command)) signalPid(command, "SIGKILL", { group: true, what: "the orphaned command" });
    }
  }, 30_000);

  test("li kill on such a session kills the command too, found the same way, and records cancelled", async () => {
    const home = agentHome();
    const pidFile = path.join(home.scratch, "command.pid");
    const leg = legAt(home, "afterSpawn", "die", [fixture("forever"), pidFile]);
    expect((await leg.out).signal).toBe("SIGKILL");
    const command = await pidFromFile(pidFile, "the orphaned command's pid");
    try {
      await untilExeced(command, "sleep");
      const [session] = await rows<{ id: string }>(home.db, "SELECT id FROM sessions");
      const killed = await li(["kill", session!.id], { home: home.home });
      expect({ code: killed.code, stderr: killed.stderr }).toEqual({ code: 0, stderr: "" });
      await untilGone(command, "the command li kill found by its LI_LEG_RUN_ID");
      const [row] = await rows<Record<string, any>>(home.db, "SELECT status, status_reason_code, status_evidence_refs FROM sessions");
      expect(row).toMatchObject({ status: "cancelled", status_reason_code: "run.cancelled.manual_kill" });
      expect(JSON.parse(row!.status_evidence_refs)).toContainEqual(expect.objectContaining({ kind: "killed", found_by: "environ:LI_LEG_RUN_ID", pgid: command }));
    } finally {
      if (isAlive(command)) signalPid(command, "SIGKILL", { group: true, what: "the orphaned command" });
    }
  }, 30_000);

  test("only processes of that run id that started at or after the leg are found", async () => {
    const home = agentHome();
    const pidFile = path.join(home.scratch, "pid");
    const runId = `unnamed-${process.pid}-${Date.now()}`;
    const proc = Bun.spawn([fixture("forever"), pidFile], { env: { ...process.env, LI_LEG_RUN_ID: runId }, stdin: "ignore", stdout: "ignore", stderr: "ignore", detached: true });
    try {
      const pid = await pidFromFile(pidFile, "the fixture's pid");
      // Looked for only once its exec of sleep is over: inside the execve its environment reads empty.
      await untilExeced(pid, "sleep");
      const ticks = readStartTicks(pid)!;
      const startedAt = Date.now() / 1000 - 5;
      expect(findLegCommand({ runId, supervisorStartTicks: ticks, startedAt })).toEqual([{ pid, pgid: pid, startTicks: ticks }]);
      // Started before the leg's supervisor: not the leg's.
      expect(findLegCommand({ runId, supervisorStartTicks: ticks + 1, startedAt: null })).toEqual([]);
      // Started before the leg (more than the second /proc cannot resolve): not the leg's.
      expect(findLegCommand({ runId, supervisorStartTicks: null, startedAt: Date.now() / 1000 + 60 })).toEqual([]);
      // Another run id, a prefix of it, or no start bound at all: nothing.
      expect(findLegCommand({ runId: `${runId}-other`, supervisorStartTicks: ticks, startedAt })).toEqual([]);
      expect(findLegCommand({ runId: runId.slice(0, -1), supervisorStartTicks: ticks, startedAt })).toEqual([]);
      expect(findLegCommand({ runId, supervisorStartTicks: null, startedAt: null })).toEqual([]);
      expect(earliestStartTicks({ runId, supervisorStartTicks: null, startedAt: null })).toBeNull();
      // Another user's processes are never looked at.
      expect(findLegCommand({ runId, supervisorStartTicks: ticks, startedAt }, { uid: 65534 })).toEqual([]);
      // Nor the looking process's own group (a watcher started inside the leg's command).
      expect(findLegCommand({ runId, supervisorStartTicks: ticks, startedAt }, { selfPid: pid })).toEqual([]);
    } finally {
      proc.kill("SIGKILL");
    }
  }, 30_000);
});
