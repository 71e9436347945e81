// `li show` end to end (§13): legs, run directory, verification, evidence, callbacks and deliveries.

import { afterEach, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { hostname } from "node:os";
import { li, LI_BINARY, liEnv } from "../helpers/cli.ts";
import { fixture } from "../helpers/fixtures.ts";
import { agentHome, rows } from "../legs/agent-harness.ts";
import { fakeClock, tempDir, tempLedger, type TempLedger } from "../helpers/ledger.ts";
import { existsSync } from "node:fs";
import { finishSession, seedSession } from "../wait/seed.ts";

const open: TempLedger[] = [];
afterEach(() => {
  for (const t of open.splice(0)) t.ledger.close();
});

async function sessionWithEverything() {
  const t = tempLedger();
  open.push(t);
  const s = await seedSession(t.ledger, { legs: [{ runId: "run-one", exitCode: 1, endedAt: t.ledger.now() }, { runId: "run-two", command: ["make", "test"] }] });
  const verification = { status: "passed", artifacts: [{ id: "report", path: "report.md", required: true, produced: true }] };
  await t.ledger.updateStatus("session", s.id, {
    newStatus: "completed",
    reasonCode: "run.completed.ok",
    evidenceRefs: [{ kind: "git", commits_ahead: 2 }],
    extraFields: { exit_code: 0, artifact_verification_json: JSON.stringify(verification) },
  });
  const now = t.ledger.now();
  await t.rows().run(
    "INSERT INTO terminal_callbacks (id, scope, name, consumer, session_id, leg_id, argv, filter_kinds, filter_ids, origin, host_id, uid, enabled, created_at) VALUES (?, 'leg', NULL, ?, ?, ?, ?, NULL, NULL, 'cli', 'host-1', ?, 1, ?)",
    "reg-1", "cb:reg-1", s.id, s.legIds[1]!, JSON.stringify(["notify-send", "{status}"]), process.getuid?.() ?? 0, now,
  );
  const terminal = (await t.ledger.backend.listTransitions("session", s.id)).find((r) => r.terminal_event === 1)!;
  await t.rows().run( "INSERT INTO terminal_deliveries (transition_id, consumer, state, attempts, created_at, updated_at) VALUES (?, 'cb:reg-1', 'acked', 1, ?, ?)", terminal.id, now, now);
  return { t, s, verification, terminal };
}

describe("li show", () => {
  test("--json of a session carries its legs, run dir, verification, evidence, callbacks and deliveries", async () => {
    const { t, s, verification, terminal } = await sessionWithEverything();
    const r = await li(["show", "--json", s.id], { home: t.paths.home });
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.kind).toBe("session");
    expect(out.entity.id).toBe(s.id);
    expect(out.legs.map((l: any) => [l.seq, l.run_id])).toEqual([[1, "run-one"], [2, "run-two"]]);
    expect(out.legs[1].command).toEqual(["make", "test"]);
    expect(out.run_dir).toBe("/tmp/li-runs/run-two");
    expect(out.artifact_dir).toBe("/tmp/li-runs/run-two/artifacts");
    expect(out.artifact_verification).toEqual(verification);
    expect(out.evidence).toEqual([{ kind: "git", commits_ahead: 2 }]);
    expect(out.callbacks).toHaveLength(1);
    expect(out.callbacks[0]).toMatchObject({ id: "reg-1", consumer: "cb:reg-1", scope: "leg", argv: ["notify-send", "{status}"], enabled: true });
    expect(out.deliveries).toEqual([expect.objectContaining({ transition_id: terminal.id, consumer: "cb:reg-1", state: "acked", attempts: 1 })]);
    expect(out.transitions.map((x: any) => x.status)).toEqual(["running", "completed"]);
    expect(Object.keys(out).sort()).toEqual(
      ["kind", "entity", "host", "run_dir", "artifact_dir", "artifact_contract", "artifact_verification", "evidence", "branches", "legs", "transitions", "admin_events", "callbacks", "deliveries", "spooled", "schedule"].sort(),
    );
  });

  test("a branch id or a run id shows its session and says how it was resolved", async () => {
    const { t, s } = await sessionWithEverything();
    const byRun = JSON.parse((await li(["show", "--json", "run-one"], { home: t.paths.home })).stdout);
    expect(byRun.entity.id).toBe(s.id);
    expect(byRun.resolved_from).toEqual({ kind: "run", id: "run-one" });
    const byBranch = JSON.parse((await li(["show", "--json", s.branchId], { home: t.paths.home })).stdout);
    expect(byBranch.resolved_from).toEqual({ kind: "branch", id: s.branchId });
  });

  test("the human view lists legs, history, callbacks and deliveries", async () => {
    const { t, s } = await sessionWithEverything();
    const r = await li(["show", s.id], { home: t.paths.home });
    expect(r.code).toBe(0);
    for (const section of ["legs:", "history:", "verification: passed", "evidence:", "callbacks:", "deliveries:", "run dir:    /tmp/li-runs/run-two", "make test", "cb:reg-1", "acked"]) expect(r.stdout).toContain(section);
  });

  test("other kinds have empty legs and callbacks, and an ambiguous prefix is a usage error", async () => {
    const t = tempLedger();
    open.push(t);
    await t.ledger.createEntity("invocation", { id: "inv-show-1" });
    await t.ledger.createEntity("invocation", { id: "inv-show-2" });
    const out = JSON.parse((await li(["show", "--json", "inv-show-1"], { home: t.paths.home })).stdout);
    expect(out).toMatchObject({ kind: "invocation", legs: [], callbacks: [], deliveries: [], run_dir: null, artifact_dir: null, artifact_verification: null });
    const amb = await li(["show", "inv-show"], { home: t.paths.home });
    expect(amb.code).toBe(2);
    expect(amb.stderr).toContain("ambiguous");
  });
});

describe("li show: admin events", () => {
  test("admin events that share a timestamp come back in one stable order, by id, whatever order they were written in", async () => {
    // A clock that never moves, and ids that count down: each audit row sorts before the one written ahead of it.
    let next = 1000;
    const t = tempLedger({ now: fakeClock(1_800_000_000).now, newId: () => `id-${next--}` });
    open.push(t);
    await t.ledger.createEntity("invocation", { id: "inv-audited" });
    await t.ledger.updateStatus("invocation", "inv-audited", { newStatus: "completed", reasonCode: "run.completed.ok" });
    // Leaving a terminal status is refused, and each refusal is audited at the same clock reading.
    for (let i = 0; i < 3; i++) await expect(t.ledger.updateStatus("invocation", "inv-audited", { newStatus: "running", reasonCode: "run.started.ok" })).rejects.toThrow();
    const written = (await t.rows().all<{ id: string; created_at: number }>("SELECT id, created_at FROM admin_events WHERE entity_id = ?", "inv-audited")).map((r) => r.id);
    expect(new Set((await t.rows().all<{ created_at: number }>("SELECT created_at FROM admin_events")).map((r) => r.created_at)).size).toBe(1);
    const byId = [...written].sort();
    expect((await t.ledger.backend.listAdminEvents("invocation", "inv-audited")).map((r) => r.id)).toEqual(byId);
    for (let read = 0; read < 2; read++) {
      const shown = JSON.parse((await li(["show", "--json", "inv-audited"], { home: t.paths.home })).stdout) as { admin_events: { id: string }[] };
      expect(shown.admin_events.map((e) => e.id)).toEqual(byId);
    }
  });
});

describe("li show: bad input", () => {
  test("an unknown id, an extra word and a missing ledger each give one line on stderr, exit 2, and change nothing", async () => {
    const t = tempLedger();
    open.push(t);
    await t.ledger.createEntity("invocation", { id: "inv-only" });
    const snapshot = async () => JSON.stringify(await t.rows().all("SELECT * FROM invocations")) + JSON.stringify(await t.rows().all("SELECT * FROM status_transitions")) + JSON.stringify(await t.rows().all("SELECT * FROM admin_events"));
    const before = await snapshot();
    for (const [args, culprit] of [[["show", "nope-none"], "nope-none"], [["show", "inv-only", "stray"], "stray"]] as const) {
      const r = await li([...args], { home: t.paths.home });
      expect(r.code).toBe(2);
      expect(r.stdout).toBe("");
      expect(r.stderr.trim().split("\n")).toHaveLength(1);
      expect(r.stderr).toContain(culprit);
    }
    expect(await snapshot()).toBe(before);
    const home = join(tempDir(), "home");
    const missing = await li(["show", "anything"], { home });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("nothing recorded yet");
    expect(existsSync(home)).toBe(false);
  });
});

describe("li show on a real `li agent` leg", () => {
  test("--json carries the leg, its run dir, the contract and its verification, the evidence, the --notify registration and its delivery", async () => {
    const home = agentHome();
    const r = await li(["agent", "--json", "--artifact", "report=r.md", "--artifact", "extra=x.md?", "--notify", "true {status}", "--", fixture("write-artifact"), "r.md"], { home: home.home });
    expect(r.code).toBe(0);
    const record = JSON.parse(r.stdout) as { session_id: string; branch_id: string; run_id: string };
    const out = JSON.parse((await li(["show", "--json", record.run_id], { home: home.home })).stdout);
    expect(out.entity.id).toBe(record.session_id);
    expect(out.resolved_from).toEqual({ kind: "run", id: record.run_id });
    expect(out.legs.map((l: any) => [l.seq, l.run_id, l.status, l.exit_code])).toEqual([[1, record.run_id, "completed", 0]]);
    expect(out.legs[0].command).toEqual([fixture("write-artifact"), "r.md"]);
    expect(out.run_dir).toBe(join(home.runs, record.run_id));
    expect(out.artifact_dir).toBe(join(home.runs, record.run_id, "artifacts"));
    expect(out.artifact_contract.expected.map((e: any) => [e.id, e.required])).toEqual([["report", true], ["extra", false]]);
    expect(out.artifact_verification.status).toBe("warning");
    expect(out.evidence).toEqual([expect.objectContaining({ kind: "process", exit_code: 0 }), expect.objectContaining({ kind: "containment", leftover_processes: [] })]);
    expect(out.callbacks).toHaveLength(1);
    expect(out.callbacks[0]).toMatchObject({ scope: "leg", argv: ["true", "{status}"], session_id: record.session_id });
    expect(out.deliveries).toEqual([expect.objectContaining({ consumer: out.callbacks[0].consumer, state: "acked", attempts: 1 })]);
    expect(out.transitions.map((x: any) => x.status)).toEqual(["running", "completed"]);
    expect(out.branches).toEqual([{ id: record.branch_id, name: null, created_at: expect.any(Number) }]);
    expect(out.legs[0]).toMatchObject({ host_id: expect.stringContaining(":"), host_name: hostname() });
  }, 60_000);
});

describe("li show for people", () => {
  test("the summary comes first: id, status and reason, the branch to resume, host, command, cwd, times, exit code, run and artifact dirs", async () => {
    const home = agentHome();
    const cwd = tempDir();
    const r = await li(["agent", "--json", "--", "sh", "-c", "echo hi; exit 3"], { home: home.home, cwd });
    expect(r.code).toBe(1);
    const record = JSON.parse(r.stdout) as { session_id: string; branch_id: string; run_id: string };
    const shown = await li(["show", record.session_id], { home: home.home });
    expect(shown.code).toBe(0);
    const [head, ...rest] = shown.stdout.split("\n\n");
    expect(head!.split("\n")[0]).toBe(`session ${record.session_id}`);
    for (const line of [
      "status:     failed (run.failed.exit_nonzero)",
      `resume:     li agent -r ${record.branch_id} -- …`,
      `host:       ${hostname()} (`,
      "command:    sh -c 'echo hi; exit 3'",
      `cwd:        ${cwd}`,
      "started:    20",
      "ended:      20",
      "duration:   ",
      "exit code:  3",
      `run dir:    ${join(home.runs, record.run_id)}`,
      `artifacts:  ${join(home.runs, record.run_id, "artifacts")}`,
    ]) {
      expect(head).toContain(`  ${line}`);
    }
    expect(rest.join("\n\n")).toContain("legs:");
    // Raw columns only under --raw.
    expect(shown.stdout).not.toContain("node_metadata");
    const raw = await li(["show", "--raw", record.session_id], { home: home.home });
    expect(raw.stdout).toContain("\nraw:\n");
    expect(raw.stdout).toContain("node_metadata: {");
    expect(raw.stdout).toContain("last_msg_id: ");
  }, 60_000);

  test("an escalated leg names its escalation file", async () => {
    const home = agentHome();
    const r = await li(["agent", "--json", "--", fixture("escalate"), "needs a human"], { home: home.home });
    expect(r.code).toBe(1);
    const record = JSON.parse(r.stdout) as { session_id: string; run_id: string };
    const shown = await li(["show", record.session_id], { home: home.home });
    expect(shown.stdout).toContain(`  escalation: ${join(home.runs, record.run_id, "escalations.jsonl")}`);
    expect(shown.stdout).toContain("summary:    escalated: needs a human");
  }, 60_000);

  test("status is coloured on a terminal, never into a pipe or with NO_COLOR", async () => {
    const home = agentHome();
    const r = await li(["agent", "--json", "--", "true"], { home: home.home });
    const id = (JSON.parse(r.stdout) as { session_id: string }).session_id;
    const green = "\u001b[32mcompleted\u001b[0m";
    expect((await li(["show", id], { home: home.home, env: { NO_COLOR: undefined } })).stdout).not.toContain("\u001b[");
    const underPty = (noColor: string | undefined) =>
      Bun.spawnSync(["script", "-qfec", `${LI_BINARY} show ${id}`, "/dev/null"], { env: liEnv(home.home, { NO_COLOR: noColor, TERM: "xterm" }), stdout: "pipe", stderr: "pipe" }).stdout.toString();
    expect(underPty(undefined)).toContain(green);
    expect(underPty("1")).not.toContain("\u001b[");
  }, 60_000);
});
