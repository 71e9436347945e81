// `li agent` and signals end to end: Ctrl-C on a real terminal, SIGTERM/SIGHUP to li, the command's group, kill -9, races.

import { describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { li, LI_BINARY, liEnv } from "../helpers/cli.ts";
import { fixture } from "../helpers/fixtures.ts";
import { probeProcess } from "../../src/host/proc.ts";
import { agentHome, readIf, rows, runningSession, sessionRow, spawnLi } from "../legs/agent-harness.ts";
import { isAlive, pidFromFile, pidInFile, signalPid, until, untilGone } from "../helpers/until.ts";

const lines = (file: string) => (readIf(file) ?? "").split("\n").filter(Boolean);

describe("signals to li", () => {
  test("Ctrl-C on a real terminal reaches the command exactly once and the session ends aborted (li exits 130)", async () => {
    const home = agentHome();
    const seen = path.join(home.scratch, "signals");
    const ready = path.join(home.scratch, "ready");
    const proc = Bun.spawn(["python3", path.join(import.meta.dir, "../legs/pty-ctrl-c.py"), LI_BINARY, "agent", "--run-id", "ctrl-c", "--", fixture("count-signals"), seen, ready], {
      env: { ...liEnv(home.home), READY: ready },
      stdout: "pipe",
      stderr: "pipe",
    });
    const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    expect(err).toBe("");
    expect(out.trim()).toBe("130");
    expect(lines(seen)).toEqual(["INT"]);
    const [session] = await rows<Record<string, any>>(home.db, "SELECT * FROM sessions");
    expect([session!.status, session!.status_reason_code, session!.exit_code]).toEqual(["aborted", "run.aborted.user", 0]);
  }, 30_000);

  test("when li's stdin is a terminal the command reads /dev/null", async () => {
    const home = agentHome();
    const seen = path.join(home.scratch, "stdin");
    const proc = Bun.spawn(["python3", path.join(import.meta.dir, "../legs/pty-ctrl-c.py"), LI_BINARY, "agent", "--", "sh", "-c", `readlink /proc/self/fd/0 > ${seen}`], {
      env: { ...liEnv(home.home), READY: "" },
      stdout: "pipe",
      stderr: "pipe",
    });
    const [out] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
    expect(out.trim()).toBe("0");
    expect(readIf(seen)?.trim()).toBe("/dev/null");
  }, 30_000);

  for (const [signal, code] of [["SIGTERM", 143], ["SIGHUP", 143], ["SIGINT", 130]] as const) {
    test(`${signal} to li is forwarded to the command's group once; li exits ${code}`, async () => {
      const home = agentHome();
      const seen = path.join(home.scratch, "signals");
      const ready = path.join(home.scratch, "ready");
      const run = spawnLi(["agent", "--", fixture("count-signals"), seen, ready], home);
      await until("the command to trap signals", () => fs.existsSync(ready));
      run.proc.kill(signal);
      const r = await run.out;
      expect(r.code).toBe(code);
      expect(lines(seen)).toEqual([signal.slice(3)]);
      const [session] = await rows<Record<string, any>>(home.db, "SELECT * FROM sessions");
      expect(session!.status).toBe(code === 130 ? "aborted" : "cancelled");
      expect(session!.status_reason_code).toBe(code === 130 ? "run.aborted.user" : "run.cancelled.sigterm");
    }, 30_000);
  }
});

describe("the command's process group", () => {
  test("a timeout kills a grandchild too", async () => {
    const home = agentHome();
    const pidFile = path.join(home.scratch, "grandchild.pid");
    // A deadline the grandchild is sure to outlive until it has written its pid.
    const r = await li(["agent", "--timeout", "2s", "--", "sh", "-c", `${fixture("forever")} ${pidFile} & wait`], { home: home.home });
    expect(r.code).toBe(124);
    await untilGone(pidInFile(pidFile, "the grandchild's pid"), "the grandchild to die");
  }, 30_000);

  test("a timeout SIGKILLs a grandchild that ignores SIGTERM after the grace, though the command itself already exited", async () => {
    const home = agentHome();
    const pidFile = path.join(home.scratch, "grandchild.pid");
    // A deadline the grandchild is sure to outlive until it has trapped SIGTERM and written its pid.
    const r = await li(["agent", "--timeout", "2s", "--", "sh", "-c", `sh -c 'trap "" TERM; echo $$ > ${pidFile}; exec sleep 60' & wait`], { home: home.home });
    expect(r.code).toBe(124);
    // li has exited, and the group's SIGKILL went out before it did (the sleep would otherwise live a minute).
    await untilGone(pidInFile(pidFile, "the grandchild's pid"), "the grandchild to die", { timeoutMs: 10_000 });
  }, 30_000);

  test("li never signals its caller's group: a sibling in the caller's group survives a timeout", async () => {
    const home = agentHome();
    const siblingPid = path.join(home.scratch, "sibling.pid");
    // The wrapper leads its own group (setsid); the sibling shares it, as li does.
    const script = `${fixture("forever")} ${siblingPid} >/dev/null 2>&1 & "${LI_BINARY}" agent --timeout 300ms -- ${fixture("forever")}; echo "li=$?"`;
    const proc = Bun.spawn(["setsid", "sh", "-c", script], { env: liEnv(home.home), stdout: "pipe", stderr: "pipe" });
    const out = await new Response(proc.stdout).text();
    await proc.exited;
    expect(out.trim()).toBe("li=124");
    // The sibling may write its pid after li is done; whenever it does, it must still be alive.
    const sibling = await until("the sibling's pid", () => pidInFile(siblingPid, "the sibling's pid"));
    expect(isAlive(sibling)).toBe(true);
    signalPid(sibling, "SIGKILL", { what: "the sibling" });
  }, 30_000);
});

describe("races with other writers", () => {
  test("a cancel written by another process while the leg runs stands; the leg's row is closed with its own outcome", async () => {
    const home = agentHome();
    const go = path.join(home.scratch, "go");
    const run = spawnLi(["agent", "--", "sh", "-c", `while [ ! -e ${go} ]; do sleep 0.05; done; echo finished`], home);
    const sid = await runningSession(home.db);
    const set = await li(["state", "set-status", "session", sid, "--status", "cancelled", "--reason", "run.cancelled.operator", "--expect", "running"], { home: home.home });
    expect(set.code).toBe(0);
    fs.writeFileSync(go, "");
    const r = await run.out;
    expect(r.code).toBe(143);
    expect(r.stderr).toContain("cancelled (run.cancelled.operator)");
    const s = await sessionRow(home.db, sid);
    expect([s.status, s.status_reason_code, s.exit_code, s.ended_at]).toEqual(["cancelled", "run.cancelled.operator", null, null]);
    const [leg] = await rows<Record<string, any>>(home.db, "SELECT * FROM legs");
    expect([leg!.status, leg!.exit_code]).toEqual(["completed", 0]);
    expect(leg!.ended_at).not.toBeNull();
    expect(await rows(home.db, "SELECT status FROM status_transitions WHERE entity_id = ? ORDER BY seq", sid)).toEqual([{ status: "running" }, { status: "cancelled" }]);
    expect(await rows(home.db, "SELECT COUNT(*) AS n FROM admin_events")).toEqual([{ n: 0 }]);
  }, 30_000);

  test("kill -9 of li mid-leg leaves the session running with markers of a dead supervisor", async () => {
    const home = agentHome();
    const pidFile = path.join(home.scratch, "cmd.pid");
    const run = spawnLi(["agent", "--", fixture("forever"), pidFile], home);
    const sid = await runningSession(home.db);
    await pidFromFile(pidFile, "the command's pid");
    const [before] = await rows<Record<string, any>>(home.db, "SELECT * FROM legs");
    await until("the command's markers", async () => (await rows<{ command_pid: number | null }>(home.db, "SELECT command_pid FROM legs"))[0]?.command_pid);
    run.proc.kill("SIGKILL");
    await run.out;
    const s = await sessionRow(home.db, sid);
    expect(s.status).toBe("running");
    expect(s.current_leg_id).toBe(before!.id);
    const [leg] = await rows<Record<string, any>>(home.db, "SELECT * FROM legs");
    expect(leg!.ended_at).toBeNull();
    expect(leg!.pid).toBe(run.proc.pid);
    expect(probeProcess(leg!.pid, leg!.pid_start_ticks)).not.toBe("alive");
    expect(probeProcess(leg!.command_pid, leg!.command_start_ticks)).toBe("alive");
    // The session's own copy names the dead supervisor too (the command's markers join it only with a status write).
    expect(JSON.parse(s.node_metadata)).toMatchObject({
      leg_id: leg!.id,
      supervisor_pid: leg!.pid,
      supervisor_start_ticks: leg!.pid_start_ticks,
      boot_id: leg!.boot_id,
      host_id: leg!.host_id,
    });
    expect(await home.db.integrityProblems()).toEqual([]);
    signalPid(leg!.command_pid, "SIGKILL", { group: true, what: "the orphaned command" });
  }, 30_000);
});
