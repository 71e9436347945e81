// `li agent` end to end through dist/li: outcomes, exit codes, persisted rows, environment, output channels.

import { describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { li } from "../helpers/cli.ts";
import { sentinelPath } from "../helpers/sentinel.ts";
import { fixture } from "../helpers/fixtures.ts";
import { agentHome, rows, runningSession, sessionRow, spawnLi } from "../legs/agent-harness.ts";
import { signalPid, until, validPid } from "../helpers/until.ts";

const summary = (stderr: string) => stderr.trim().split("\n").at(-1) ?? "";

async function agent(args: string[], opts: { home?: ReturnType<typeof agentHome>; env?: Record<string, string | undefined>; stdin?: string; cwd?: string } = {}) {
  const home = opts.home ?? agentHome();
  const result = await li(["agent", "--json", ...args], { home: home.home, ...(opts.env ? { env: opts.env } : {}), ...(opts.stdin !== undefined ? { stdin: opts.stdin } : {}), ...(opts.cwd ? { cwd: opts.cwd } : {}) });
  const record = result.stdout.trim() ? JSON.parse(result.stdout) : null;
  return { ...result, record, home };
}

describe("outcomes and exit codes (§8.1)", () => {
  test("exit 0 is completed and li exits 0", async () => {
    const r = await agent(["--", fixture("exit-with"), "0"]);
    expect(r.code).toBe(0);
    expect(r.record.status).toBe("completed");
    const s = await sessionRow(r.home.db, r.record.session_id);
    expect([s.status, s.status_reason_code, s.exit_code]).toEqual(["completed", "run.completed.ok", 0]);
  });

  test("a non-zero exit is failed with the command's own code recorded, and li exits 1", async () => {
    const r = await agent(["--", fixture("exit-with"), "7"]);
    expect(r.code).toBe(1);
    const s = await sessionRow(r.home.db, r.record.session_id);
    expect([s.status, s.status_reason_code, s.exit_code]).toEqual(["failed", "run.failed.exit_nonzero", 7]);
    const leg = (await rows(r.home.db, "SELECT * FROM legs WHERE session_id = ?", r.record.session_id))[0]!;
    expect([leg.status, leg.exit_code]).toEqual(["failed", 7]);
  });

  test("a command killed by a signal of its own is failed with 128+N", async () => {
    const r = await agent(["--", fixture("kill-self"), "KILL"]);
    expect(r.code).toBe(1);
    const s = await sessionRow(r.home.db, r.record.session_id);
    expect([s.status, s.status_reason_code, s.exit_code]).toEqual(["failed", "run.failed.exit_nonzero", 137]);
  });

  test("--timeout ends a command that ignores SIGTERM with SIGKILL after the grace: timed_out, li exits 124", async () => {
    // A deadline the fixture is sure to outlive until its trap is installed (a SIGTERM before that kills it).
    const r = await agent(["--timeout", "2s", "--", fixture("ignore-sigterm")]);
    expect(r.code).toBe(124);
    const s = await sessionRow(r.home.db, r.record.session_id);
    expect([s.status, s.status_reason_code, s.exit_code]).toEqual(["timed_out", "run.timed_out.deadline", 137]);
  }, 30_000);

  test("a command that prints nothing and exits 0 is completed without a message row", async () => {
    const r = await agent(["--", fixture("print-nothing")]);
    expect(r.code).toBe(0);
    expect(await rows(r.home.db, "SELECT * FROM messages")).toEqual([]);
  });

  test("a command that prints a lot keeps the tail as its message, marked truncated", async () => {
    const r = await agent(["--", fixture("print-lots"), "20000"]);
    expect(r.code).toBe(0);
    expect(r.stderr.split("\n").filter((l) => l.startsWith("line ")).length).toBe(20000);
    const [message] = await rows<{ content: string; truncated: number; role: string }>(r.home.db, "SELECT * FROM messages");
    expect(message!.role).toBe("assistant");
    expect(message!.truncated).toBe(1);
    expect(message!.content.endsWith("line 20000\n")).toBe(true);
    expect(message!.content.length).toBeLessThanOrEqual(64 * 1024);
  });

  test("a grandchild holding the output pipes does not make the leg hang", async () => {
    const r = await agent(["--", fixture("grandchild-holds-pipes")]);
    expect(r.code).toBe(0);
    expect(r.record.status).toBe("completed");
    signalPid(validPid(/grandchild (\d+)/.exec(r.stderr)?.[1], "the grandchild"), "SIGKILL", { what: "the grandchild" });
  });

  test("a command that is not found is failed (run.failed.exception) with 127 recorded, and li exits 127 as a shell does", async () => {
    const r = await agent(["--", sentinelPath("command")]);
    expect(r.code).toBe(127);
    const s = await sessionRow(r.home.db, r.record.session_id);
    expect([s.status, s.status_reason_code, s.exit_code]).toEqual(["failed", "run.failed.exception", 127]);
    const onPath = await agent(["--", "no-such-command-anywhere"]);
    expect(onPath.code).toBe(127);
  });

  test("a file that is not executable is failed with 126 recorded, and li exits 126", async () => {
    const home = agentHome();
    const script = path.join(home.scratch, "not-executable.sh");
    fs.writeFileSync(script, "echo never\n", { mode: 0o644 });
    const r = await agent(["--", script], { home });
    expect(r.code).toBe(126);
    const s = await sessionRow(r.home.db, r.record.session_id);
    expect([s.status, s.status_reason_code, s.exit_code]).toEqual(["failed", "run.failed.exception", 126]);
  });
});

describe("--help", () => {
  test("says how long a timed-out command has between SIGTERM and SIGKILL, and how to change it", async () => {
    const r = await li(["agent", "--help"]);
    expect(r.code).toBe(0);
    // --timeout says the grace comes between the signals; --kill-grace says how long it is, and its setting.
    expect(r.stdout).toContain("gets SIGTERM, and SIGKILL after --kill-grace (default 5 s) if still running");
    expect(r.stdout).toMatch(/--kill-grace=DURATION +how long a stopped leg's processes get between SIGTERM and SIGKILL \(default 5s; setting agent\.kill_grace\)/);
  });
});

describe("output channels", () => {
  test("without --json the command's stdout is li's stdout and the summary is the last stderr line", async () => {
    const home = agentHome();
    const r = await li(["agent", "--", "sh", "-c", "echo to-out; echo to-err >&2"], { home: home.home });
    expect(r.stdout).toBe("to-out\n");
    expect(r.stderr).toContain("to-err\n");
    expect(summary(r.stderr)).toMatch(/^li: completed \(run\.completed\.ok\) session [0-9a-f-]{36} branch [0-9a-f-]{36}$/);
  });

  test("with --json stdout holds exactly one JSON record and the command's stdout goes to stderr", async () => {
    const r = await agent(["--", "sh", "-c", "echo to-out"]);
    expect(r.stdout.trim().split("\n")).toHaveLength(1);
    expect(Object.keys(r.record).sort()).toEqual(["branch_id", "exit_code", "leg_id", "legs", "persisted", "reason_code", "run_id", "session_id", "status"]);
    expect(r.stderr).toContain("to-out\n");
  });

  test("piped stdin is passed through to the command", async () => {
    const r = await agent(["--", fixture("read-stdin")], { stdin: "piped words\n" });
    expect(r.stderr).toContain("piped words\n");
  });

  test("stdout and stderr are captured in the leg's stream buffer", async () => {
    const r = await agent(["--", "sh", "-c", "echo A; echo B >&2"]);
    const leg = (await rows<{ state_root: string }>(r.home.db, "SELECT state_root FROM legs"))[0]!;
    const log = fs.readFileSync(path.join(leg.state_root, "stream", `${r.record.branch_id}.log`), "utf8");
    expect(log.split("\n").sort()).toEqual(["", "A", "B"]);
  });
});

describe("the leg's identity in the command's environment", () => {
  test("LI_SESSION_ID, LI_BRANCH_ID, LI_LEG_RUN_ID, LI_ARTIFACT_ROOT, LI_ESCALATE_FILE are set and LI_RUN_ID is consumed", async () => {
    const r = await agent(["--", fixture("echo-env")], { env: { LI_RUN_ID: "from-env-1" } });
    const env = Object.fromEntries(r.stderr.split("\n").filter((l) => l.startsWith("LI_") && l.includes("=")).map((l) => l.split(/=(.*)/s).slice(0, 2)));
    expect(env.LI_SESSION_ID).toBe(r.record.session_id);
    expect(env.LI_BRANCH_ID).toBe(r.record.branch_id);
    expect(env.LI_LEG_RUN_ID).toBe("from-env-1");
    expect(r.record.run_id).toBe("from-env-1");
    expect(env.LI_ARTIFACT_ROOT).toBe(path.join(r.home.runs, "from-env-1", "artifacts"));
    expect(env.LI_ESCALATE_FILE).toBe(path.join(r.home.runs, "from-env-1", "escalations.jsonl"));
    expect(env.LI_RUN_ID).toBeUndefined();
  });

  test("a nested li agent inside a leg gets its own run id", async () => {
    const home = agentHome();
    const { LI_BINARY } = await import("../helpers/cli.ts");
    // --pass-env LI_DB: the inner li records in the same ledger on PostgreSQL too (LI_DB is withheld otherwise, §18).
    const r = await li(["agent", "--run-id", "outer-1", "--pass-env", "LI_DB", "--", LI_BINARY, "agent", "--", fixture("echo-env")], { home: home.home, env: { LI_RUN_ID: "ignored-by-outer" } });
    expect(r.code).toBe(0);
    const runIds = (await rows<{ run_id: string }>(home.db, "SELECT run_id FROM legs ORDER BY started_at")).map((l) => l.run_id);
    expect(runIds).toHaveLength(2);
    expect(runIds[0]).toBe("outer-1");
    expect(runIds[1]).not.toBe("outer-1");
    expect(runIds[1]).not.toBe("ignored-by-outer");
    expect(runIds[1]).toMatch(/^\d{8}T\d{6}-[0-9a-f]{6}$/);
  });
});

describe("the persisted rows for one leg", () => {
  test("session, branch, leg (opened and closed), message, one history row per transition, manifest", async () => {
    const r = await agent(["--run-id", "rows-1", "--", "sh", "-c", "echo the answer"]);
    const { session_id: sid, branch_id: bid, leg_id: lid } = r.record;
    const s = await sessionRow(r.home.db, sid);
    expect(s.current_leg_id).toBe(lid);
    expect(s.artifacts_path).toBe(path.join(r.home.runs, "rows-1", "artifacts"));
    expect(s.ended_at).toBeGreaterThanOrEqual(s.started_at);
    const markers = JSON.parse(s.node_metadata);
    expect(markers.leg_id).toBe(lid);
    expect(typeof markers.supervisor_pid).toBe("number");
    expect(typeof markers.command_pid).toBe("number");
    expect(markers.host_id).toContain(markers.boot_id);
    expect(await rows(r.home.db, "SELECT id, session_id FROM branches")).toEqual([{ id: bid, session_id: sid }]);
    const [leg] = await rows<Record<string, any>>(r.home.db, "SELECT * FROM legs");
    expect(leg).toMatchObject({ id: lid, session_id: sid, seq: 1, run_id: "rows-1", status: "completed", reason_code: "run.completed.ok", exit_code: 0, deferred: 0 });
    expect(JSON.parse(leg!.command)).toEqual(["sh", "-c", "echo the answer"]);
    expect(leg!.ended_at).not.toBeNull();
    expect(leg!.pid).toBe(markers.supervisor_pid);
    expect(leg!.command_pid).toBe(markers.command_pid);
    expect(leg!.command_start_ticks).toBeGreaterThan(0);
    const [message] = await rows<Record<string, any>>(r.home.db, "SELECT * FROM messages");
    expect(message).toMatchObject({ session_id: sid, branch_id: bid, leg_id: lid, role: "assistant", content: "the answer\n", truncated: 0 });
    expect([leg!.first_msg_id, leg!.last_msg_id]).toEqual([message!.id, message!.id]);
    // The session's endpoints move with its final status (§8.2 step 9).
    expect([s.first_msg_id, s.last_msg_id]).toEqual([message!.id, message!.id]);
    const history = await rows<Record<string, any>>(r.home.db, "SELECT previous_status, status, reason_code, terminal_event FROM status_transitions WHERE entity_id = ? ORDER BY seq", sid);
    expect(history).toEqual([
      { previous_status: null, status: "running", reason_code: "run.started.ok", terminal_event: 0 },
      { previous_status: "running", status: "completed", reason_code: "run.completed.ok", terminal_event: 1 },
    ]);
    const manifest = JSON.parse(fs.readFileSync(path.join(r.home.runs, "rows-1", "run.json"), "utf8"));
    expect(manifest).toMatchObject({ run_id: "rows-1", state_root: path.join(r.home.runs, "rows-1"), artifact_root: path.join(r.home.runs, "rows-1", "artifacts"), session_id: sid, branch_id: bid, leg_id: lid, persisted: true });
    expect(manifest.command).toEqual(["sh", "-c", "echo the answer"]);
    expect(fs.existsSync(path.join(r.home.runs, "rows-1", "branches"))).toBe(true);
  });

  test("while the command runs: the session is running with this leg current, and the leg row is open with both sets of markers", async () => {
    const home = agentHome();
    const go = path.join(home.scratch, "go");
    const run = spawnLi(["agent", "--run-id", "open-1", "--", "sh", "-c", `while [ ! -e ${go} ]; do sleep 0.05; done`], home);
    const sid = await runningSession(home.db);
    await until("the command's markers", async () => (await rows<{ command_pid: number | null }>(home.db, "SELECT command_pid FROM legs"))[0]?.command_pid);
    const s = await sessionRow(home.db, sid);
    const [leg] = await rows<Record<string, any>>(home.db, "SELECT * FROM legs");
    expect([s.status, s.status_reason_code, s.current_leg_id, s.ended_at, s.exit_code]).toEqual(["running", "run.started.ok", leg!.id, null, null]);
    expect(leg).toMatchObject({ session_id: sid, seq: 1, run_id: "open-1", status: "running", reason_code: "run.started.ok", ended_at: null, exit_code: null, pid: run.proc.pid });
    expect(leg!.pid_start_ticks).toBeGreaterThan(0);
    expect(leg!.command_start_ticks).toBeGreaterThan(0);
    expect(leg!.host_id).toContain(leg!.boot_id);
    expect(JSON.parse(s.node_metadata)).toMatchObject({ leg_id: leg!.id, run_id: "open-1", supervisor_pid: run.proc.pid, supervisor_start_ticks: leg!.pid_start_ticks, boot_id: leg!.boot_id, host_id: leg!.host_id });
    expect(await rows(home.db, "SELECT COUNT(*) AS n FROM status_transitions")).toEqual([{ n: 1 }]);
    fs.writeFileSync(go, "");
    expect((await run.out).code).toBe(0);
    expect(await rows(home.db, "SELECT status, ended_at IS NOT NULL AS closed FROM legs")).toEqual([{ status: "completed", closed: 1 }]);
  }, 30_000);

  test("--no-persist opens no ledger, still writes the run directory and stream, and exits by the outcome", async () => {
    const home = agentHome();
    const r = await li(["agent", "--no-persist", "--run-id", "np-1", "--", fixture("exit-with"), "3"], { home: home.home });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("--no-persist");
    expect((await home.db.exists())).toBe(false);
    expect(fs.readdirSync(path.join(home.runs, "np-1", "stream"))).toHaveLength(1);
    expect(JSON.parse(fs.readFileSync(path.join(home.runs, "np-1", "run.json"), "utf8")).persisted).toBe(false);
  });

  test("--no-persist does not even load the ledger's opener (its profile has no such step; a recorded leg's has)", async () => {
    const home = agentHome();
    const profile = path.join(home.scratch, "profile.jsonl");
    const steps = () => fs.readFileSync(profile, "utf8").trim().split("\n").map((line) => (JSON.parse(line) as { marks: [string, number, number][] }).marks.map(([name]) => name));
    expect((await li(["agent", "--no-persist", "--", "true"], { home: home.home, env: { LI_PROFILE_FILE: profile } })).code).toBe(0);
    expect((await li(["agent", "--", "true"], { home: home.home, env: { LI_PROFILE_FILE: profile } })).code).toBe(0);
    const [noPersist, recorded] = steps();
    expect(noPersist).toContain("settings lookup");
    expect(noPersist).not.toContain("ledger opener loaded");
    expect(recorded).toContain("ledger opener loaded");
    expect(await home.db.exists()).toBe(true);
  });

  test("an unusable ledger in the foreground warns and the command still runs", async () => {
    const home = agentHome();
    const r = await li(["agent", "--", fixture("exit-with"), "0"], { home: home.home, env: { LI_DB: "/etc/passwd/state.db" } });
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("warning:");
  });
});

describe("settings (§15)", () => {
  test("agent.timeout from $LI_HOME/settings.yaml applies when --timeout is absent, and the flag beats it", async () => {
    const home = agentHome();
    fs.mkdirSync(home.home, { recursive: true });
    fs.writeFileSync(path.join(home.home, "settings.yaml"), "agent:\n  timeout: 300ms\n");
    expect((await li(["agent", "--", fixture("forever")], { home: home.home })).code).toBe(124);
    expect((await li(["agent", "--timeout", "1h", "--", fixture("exit-with"), "0"], { home: home.home })).code).toBe(0);
  }, 30_000);

  test("a project .li/settings.yaml above --cwd is found", async () => {
    const home = agentHome();
    const project = path.join(home.scratch, "project");
    fs.mkdirSync(path.join(project, ".li"), { recursive: true });
    fs.mkdirSync(path.join(project, "sub"));
    fs.writeFileSync(path.join(project, ".li", "settings.yaml"), "agent:\n  timeout: 300ms\n");
    // A timeout shorter than the user's own (none) applies once the file is trusted (§18).
    expect((await li(["trust", project], { home: home.home })).code).toBe(0);
    expect((await li(["agent", "--cwd", path.join(project, "sub"), "--", fixture("forever")], { home: home.home })).code).toBe(124);
  }, 30_000);
});

describe("usage errors exit 2 and write nothing; a missing --cwd exits 78", () => {
  const cases: [string, string[], RegExp][] = [
    ["no command", [], /needs a command/],
    ["a bad --timeout", ["--timeout", "soon", "--", "true"], /--timeout/],
    ["a bad --auto-resume", ["--timeout", "1", "--auto-resume", "-1", "--", "true"], /auto-resume|unknown flag/],
    ["an unsafe --run-id", ["--run-id", "../x", "--", "true"], /--run-id/],
    ["a bad --linked-session", ["--linked-session", "/x", "--", "true"], /--linked-session/],
    ["--resume-command without --auto-resume", ["--resume-command", "true", "--", "true"], /--resume-command/],
    ["an unknown flag", ["--frobnicate", "--", "true"], /--frobnicate/],
  ];
  for (const [name, args, message] of cases) {
    test(`${name}`, async () => {
      const home = agentHome();
      const r = await li(["agent", ...args], { home: home.home });
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(message);
      expect(r.stderr.trim().split("\n")).toHaveLength(1);
      expect(fs.existsSync(home.home)).toBe(false);
    });
  }

  test("an unsafe LI_RUN_ID is refused naming the variable, and nothing is written", async () => {
    const home = agentHome();
    const marker = path.join(home.scratch, "ran");
    const r = await li(["agent", "--", "touch", marker], { home: home.home, env: { LI_RUN_ID: "../x" } });
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split("\n")).toEqual([`li: LI_RUN_ID: "../x" is not a valid id (letters, digits, '.', '_', ':', '-'; not starting with a punctuation mark)`]);
    expect(fs.existsSync(marker)).toBe(false);
    expect(fs.existsSync(home.home)).toBe(false);
  });

  test("an explicit --run-id wins over an unsafe LI_RUN_ID, which is consumed unused", async () => {
    const r = await agent(["--run-id", "explicit-1", "--", fixture("exit-with"), "0"], { env: { LI_RUN_ID: "../x" } });
    expect([r.code, r.record.run_id]).toEqual([0, "explicit-1"]);
  });

  test("a reused run id is a usage error and writes nothing more", async () => {
    const home = agentHome();
    expect((await li(["agent", "--run-id", "same-1", "--", "true"], { home: home.home })).code).toBe(0);
    const before = await rows(home.db, "SELECT COUNT(*) AS n FROM status_transitions");
    const r = await li(["agent", "--run-id", "same-1", "--", "true"], { home: home.home });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("same-1");
    expect(await rows(home.db, "SELECT COUNT(*) AS n FROM status_transitions")).toEqual(before);
  });

  test("a missing --cwd exits 78 naming it, and nothing is written", async () => {
    const home = agentHome();
    const missing = path.join(home.scratch, "no-such-dir");
    const r = await li(["agent", "--cwd", missing, "--", "true"], { home: home.home });
    expect(r.code).toBe(78);
    expect(r.stderr).toContain(missing);
    expect(fs.existsSync(home.home)).toBe(false);
  });
});
