// `li agent --detach` (§8.4), `--auto-resume` (§8.6) and `--linked-session` (§8.2 step 5) end to end.

import { describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { li, LI_BINARY, liEnv } from "../helpers/cli.ts";
import { fixture } from "../helpers/fixtures.ts";
import { probeProcess } from "../../src/host/proc.ts";
import { agentHome, readIf, rows, sessionRow } from "../legs/agent-harness.ts";
import { pidFromFile, signalPid, until } from "../helpers/until.ts";

describe("--detach", () => {
  test("the id comes back before the command ends, the row already shows the supervisor's markers, and later the outcome", async () => {
    const home = agentHome();
    const go = path.join(home.scratch, "go");
    const r = await li(["agent", "--detach", "--json", "--", "sh", "-c", `while [ ! -e ${go} ]; do sleep 0.05; done; echo finished; exit 3`], { home: home.home });
    expect(r.code).toBe(0);
    const record = JSON.parse(r.stdout);
    expect(Object.keys(record).sort()).toEqual(["branch_id", "run_id", "session_id"]);
    const s = await sessionRow(home.db, record.session_id);
    expect(s.status).toBe("running");
    const [leg] = await rows<Record<string, any>>(home.db, "SELECT * FROM legs");
    expect(leg!.run_id).toBe(record.run_id);
    expect(JSON.parse(s.node_metadata).supervisor_pid).toBe(leg!.pid);
    expect(probeProcess(leg!.pid, leg!.pid_start_ticks)).toBe("alive");
    fs.writeFileSync(go, "");
    await until("the detached leg to finish", async () => (await sessionRow(home.db, record.session_id)).status !== "running");
    const done = await sessionRow(home.db, record.session_id);
    expect([done.status, done.exit_code]).toEqual(["failed", 3]);
    const stream = fs.readFileSync(path.join(home.runs, record.run_id, "stream", `${record.branch_id}.log`), "utf8");
    expect(stream).toBe("finished\n");
    await until("the supervisor's summary", () => readIf(path.join(home.runs, record.run_id, "stream", "li.log"))?.includes("failed"));
  }, 30_000);

  test("the leg survives the terminal it was started from closing, and finalizes with the command's outcome", async () => {
    const home = agentHome();
    const go = path.join(home.scratch, "go");
    // Started under a real pseudo-terminal; the helper exits once li has, which closes the terminal (a hangup for its session).
    const proc = Bun.spawn(["python3", path.join(import.meta.dir, "../legs/pty-ctrl-c.py"), LI_BINARY, "agent", "--detach", "--", "sh", "-c", `while [ ! -e ${go} ]; do sleep 0.05; done; exit 4`], {
      env: { ...liEnv(home.home), READY: "" },
      stdout: "pipe",
      stderr: "pipe",
    });
    const [out] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
    expect(out.trim()).toBe("0");
    const [started] = await rows<Record<string, any>>(home.db, "SELECT * FROM sessions");
    expect(started!.status).toBe("running");
    fs.writeFileSync(go, "");
    await until("the detached leg to finish", async () => (await sessionRow(home.db, started!.id)).status !== "running");
    const done = await sessionRow(home.db, started!.id);
    expect([done.status, done.status_reason_code, done.exit_code]).toEqual(["failed", "run.failed.exit_nonzero", 4]);
  }, 30_000);

  test("without --json it prints the session id alone", async () => {
    const home = agentHome();
    const r = await li(["agent", "--detach", "--", "true"], { home: home.home });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^[0-9a-f-]{36}\n$/);
    await until("the leg to finish", async () => (await sessionRow(home.db, r.stdout.trim())).status === "completed");
  }, 30_000);

  test("a detached command that cannot be started records 127 (not found) and 126 (not executable)", async () => {
    const home = agentHome();
    const script = path.join(home.scratch, "not-executable.sh");
    fs.writeFileSync(script, "echo never\n", { mode: 0o644 });
    for (const [argv, code] of [[["no-such-command-anywhere"], 127], [[script], 126]] as const) {
      const r = await li(["agent", "--detach", "--", ...argv], { home: home.home });
      expect(r.code).toBe(0);
      const id = r.stdout.trim();
      await until("the detached leg to end", async () => (await sessionRow(home.db, id)).status !== "running");
      const s = await sessionRow(home.db, id);
      expect([s.status, s.status_reason_code, s.exit_code]).toEqual(["failed", "run.failed.exception", code]);
    }
  });

  test("the detaching parent loads none of the leg machinery: its profile parses the request and has no 'leg modules loaded' step (a foreground leg's has)", async () => {
    const home = agentHome();
    const profile = path.join(home.scratch, "profile.jsonl");
    const steps = (file: string) => fs.readFileSync(file, "utf8").trim().split("\n").map((line) => (JSON.parse(line) as { marks: [string, number, number][] }).marks.map(([name]) => name));
    const r = await li(["agent", "--detach", "--", "true"], { home: home.home, env: { LI_PROFILE_FILE: profile } });
    expect(r.code).toBe(0);
    // The supervisor appends a line of its own when it exits: the parent's is the one that parsed the request.
    const parent = steps(profile).filter((names) => names.includes("request parsed"));
    expect(parent).toHaveLength(1);
    expect(parent[0]).not.toContain("leg modules loaded");
    await until("the detached leg to finish", async () => (await sessionRow(home.db, r.stdout.trim())).status !== "running");
    const foreground = path.join(home.scratch, "foreground.jsonl");
    expect((await li(["agent", "--", "true"], { home: home.home, env: { LI_PROFILE_FILE: foreground } })).code).toBe(0);
    expect(steps(foreground)[0]).toContain("leg modules loaded");
  }, 30_000);

  test("a detached start without persistence fails with 78", async () => {
    const home = agentHome();
    const r = await li(["agent", "--detach", "--", "true"], { home: home.home, env: { LI_DB: "/etc/passwd/state.db" } });
    expect(r.code).toBe(78);
    expect(r.stdout).toBe("");
  });

  test("--detach --no-persist is refused with 78", async () => {
    const r = await li(["agent", "--detach", "--no-persist", "--", "true"], { home: agentHome().home });
    expect(r.code).toBe(78);
  });

  test("a usage error found by the supervisor (a reused run id) comes back as exit 2", async () => {
    const home = agentHome();
    expect((await li(["agent", "--run-id", "dup-1", "--", "true"], { home: home.home })).code).toBe(0);
    const r = await li(["agent", "--detach", "--run-id", "dup-1", "--", "true"], { home: home.home });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("dup-1");
  });
});

describe("--auto-resume", () => {
  test("a timed-out leg defers its terminal and new legs continue the same session, up to N times; the last finalizes", async () => {
    const home = agentHome();
    const r = await li(["agent", "--json", "--timeout", "300ms", "--auto-resume", "2", "--", fixture("forever")], { home: home.home });
    expect(r.code).toBe(124);
    const record = JSON.parse(r.stdout);
    expect(record.legs).toBe(3);
    const legs = await rows<Record<string, any>>(home.db, "SELECT * FROM legs ORDER BY seq");
    expect(legs.map((l) => [l.seq, l.status, l.deferred, l.session_id])).toEqual([
      [1, "timed_out", 1, record.session_id],
      [2, "timed_out", 1, record.session_id],
      [3, "timed_out", 0, record.session_id],
    ]);
    expect(new Set(legs.map((l) => l.run_id)).size).toBe(3);
    expect(new Set(legs.map((l) => l.artifact_root)).size).toBe(1);
    const s = await sessionRow(home.db, record.session_id);
    expect([s.status, s.current_leg_id]).toEqual(["timed_out", legs[2]!.id]);
    const history = await rows<Record<string, any>>(home.db, "SELECT previous_status, status, terminal_event FROM status_transitions WHERE entity_id = ? ORDER BY seq", record.session_id);
    expect(history.map((h) => `${h.previous_status}>${h.status}`)).toEqual(["null>running", "running>running", "running>running", "running>timed_out"]);
    expect(history.filter((h) => h.terminal_event === 1)).toHaveLength(1);
  }, 30_000);

  test("--resume-command runs on the continuing legs; its outcome finalizes the session", async () => {
    const home = agentHome();
    // The deadline is every leg's: the resume command must finish inside it, so it is far longer than a start.
    const r = await li(["agent", "--json", "--timeout", "2s", "--auto-resume", "3", "--resume-command", `${fixture("exit-with")} 0`, "--", fixture("forever")], { home: home.home });
    expect(r.code).toBe(0);
    const legs = await rows<Record<string, any>>(home.db, "SELECT command, status FROM legs ORDER BY seq");
    expect(legs.map((l) => [JSON.parse(l.command)[0], l.status])).toEqual([
      [fixture("forever"), "timed_out"],
      [fixture("exit-with"), "completed"],
    ]);
    expect((await sessionRow(home.db, JSON.parse(r.stdout).session_id)).status).toBe("completed");
  }, 30_000);
});

describe("--linked-session", () => {
  async function linked(prepare: (home: ReturnType<typeof agentHome>) => Promise<string>) {
    const home = agentHome();
    const engine = await prepare(home);
    const r = await li(["agent", "--json", "--linked-session", engine, "--", fixture("exit-with"), "75"], { home: home.home });
    return { r, engine, home, s: await sessionRow(home.db, JSON.parse(r.stdout).session_id) };
  }

  test("a provider failure (exit 75) takes the terminal linked session's outcome", async () => {
    const { r, s, engine } = await linked(async (home) => JSON.parse((await li(["agent", "--json", "--", "sh", "-c", "echo engine done"], { home: home.home })).stdout).session_id);
    expect(r.code).toBe(0);
    expect([s.status, s.status_reason_code, s.linked_session_id, s.exit_code]).toEqual(["completed", "run.completed.ok", engine, 75]);
    expect(JSON.parse(s.status_evidence_refs)[0]).toMatchObject({ kind: "linked_session", id: engine, status: "completed" });
  }, 30_000);

  test("a running linked session keeps this session running", async () => {
    const pidFile = (home: ReturnType<typeof agentHome>) => path.join(home.scratch, "engine.pid");
    const { r, s, home } = await linked(async (home) => (await li(["agent", "--detach", "--", fixture("forever"), pidFile(home)], { home: home.home })).stdout.trim());
    expect(r.code).toBe(1);
    expect([s.status, s.status_reason_code, s.ended_at]).toEqual(["running", "session.running.linked_pending", null]);
    signalPid(await pidFromFile(pidFile(home), "the engine's pid"), "SIGKILL", { what: "the engine" });
  }, 30_000);

  test("a missing linked session leaves failed", async () => {
    const { r, s } = await linked(async () => "engine-gone");
    expect(r.code).toBe(1);
    expect([s.status, s.status_reason_code]).toEqual(["failed", "run.failed.exit_nonzero"]);
  });
});
