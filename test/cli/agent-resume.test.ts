// `li agent -r` and `--notify` end to end through dist/li (§8, §9.1, §9.4, §10; ADR-0105 Verification).

import { describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { onPostgres } from "../helpers/backends.ts";
import { li, liEnv } from "../helpers/cli.ts";
import { fixture } from "../helpers/fixtures.ts";
import type { LedgerRows } from "../helpers/ledger-rows.ts";
import { agentHome, rows, sessionRow, spawnLi, type AgentHome } from "../legs/agent-harness.ts";
import { until } from "../helpers/until.ts";
import { recorded, RECORD } from "../notify/helpers.ts";

async function agent(home: AgentHome, args: string[], opts: { cwd?: string } = {}) {
  const result = await li(["agent", "--json", ...args], { home: home.home, ...(opts.cwd ? { cwd: opts.cwd } : {}) });
  const record = result.stdout.trim() ? JSON.parse(result.stdout) : null;
  return { ...result, record };
}

const notify = (out: string, extra = "{status}") => ["--notify", `${RECORD} ${out} ${extra}`];
const history = (db: LedgerRows, id: string) => rows<{ previous_status: string | null; status: string; reason_code: string }>(db, "SELECT previous_status, status, reason_code FROM status_transitions WHERE entity_id = ? ORDER BY seq", id);

/** A command that runs until `file` exists, then exits with `code`. */
const untilFile = (file: string, code = 0) => ["sh", "-c", `while [ ! -f "$1" ]; do sleep 0.02; done; exit ${code}`, "wait", file];

describe("the notice of a resumed leg (ADR-0105 Verification 1)", () => {
  test("fires with the resumed leg's status after a real running→completed change that follows the completed→running reopen; the first leg's does not fire again", async () => {
    const home = agentHome();
    const first = path.join(home.scratch, "first");
    const second = path.join(home.scratch, "second");
    const a = await agent(home, [...notify(first), "--", "true"]);
    expect(a.code).toBe(0);
    expect(recorded(first)).toHaveLength(1);
    // Any write of node_metadata that is not the status write itself is recorded here (Verification 3).
    await home.db.run("CREATE TABLE test_marker_writes (session_id TEXT)");
    // A trigger is dialect SQL by nature: the same condition, spelled for each backend.
    if (onPostgres) {
      await home.db.run("CREATE FUNCTION test_marker_writes_f() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO test_marker_writes VALUES (NEW.id); RETURN NEW; END $$");
      await home.db.run("CREATE TRIGGER test_marker_writes_t AFTER UPDATE OF node_metadata ON sessions FOR EACH ROW WHEN (NEW.node_metadata IS DISTINCT FROM OLD.node_metadata AND NEW.status IS NOT DISTINCT FROM OLD.status) EXECUTE FUNCTION test_marker_writes_f()");
    } else {
      await home.db.run("CREATE TRIGGER test_marker_writes_t AFTER UPDATE OF node_metadata ON sessions WHEN NEW.node_metadata IS NOT OLD.node_metadata AND NEW.status IS OLD.status BEGIN INSERT INTO test_marker_writes VALUES (NEW.id); END");
    }

    const b = await agent(home, ["-r", a.record.branch_id.slice(0, 8), ...notify(second, "{status} {previous_status} {session_id}"), "--", fixture("exit-with"), "0"]);
    expect(b.code).toBe(0);
    expect(b.record).toMatchObject({ session_id: a.record.session_id, branch_id: a.record.branch_id, status: "completed", persisted: true });
    const lines = recorded(second);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(`completed session ${a.record.session_id} completed running ${a.record.session_id}`);
    expect((await history(home.db, a.record.session_id)).map((h) => `${h.previous_status}→${h.status}`)).toEqual(["null→running", "running→completed", "completed→running", "running→completed"]);
    expect((await history(home.db, a.record.session_id))[2]!.reason_code).toBe("session.reopened.by_resume");
    expect(recorded(first)).toHaveLength(1);
    expect(await rows(home.db, "SELECT session_id FROM test_marker_writes")).toEqual([]);
    const s = await sessionRow(home.db, a.record.session_id);
    expect([s.current_leg_id, s.exit_code]).toEqual([b.record.leg_id, 0]);
    expect(await rows(home.db, "SELECT actor FROM admin_events WHERE event_type = 'status_transition_override'")).toEqual([{ actor: "cli.resume" }]);
    // And later delivery passes owe nothing to either registration.
    expect((await li(["events", "deliver"], { home: home.home })).code).toBe(0);
    expect([recorded(first).length, recorded(second).length]).toEqual([1, 1]);
  }, 30_000);

  test("the session's first message stays the first leg's; its last becomes the resumed leg's", async () => {
    const home = agentHome();
    const a = await agent(home, ["--", "sh", "-c", "echo first answer"]);
    const b = await agent(home, ["-r", a.record.branch_id, "--", "sh", "-c", "echo second answer"]);
    expect(b.code).toBe(0);
    const messages = await rows<{ id: string; leg_id: string; content: string }>(home.db, "SELECT id, leg_id, content FROM messages ORDER BY created_at");
    expect(messages.map((m) => [m.leg_id, m.content])).toEqual([
      [a.record.leg_id, "first answer\n"],
      [b.record.leg_id, "second answer\n"],
    ]);
    const s = await sessionRow(home.db, a.record.session_id);
    expect([s.first_msg_id, s.last_msg_id]).toEqual([messages[0]!.id, messages[1]!.id]);
  }, 30_000);

  test("the resumed leg inherits the session's contract and artifact root; contract flags with -r are a usage error", async () => {
    const home = agentHome();
    const saveDir = path.join(home.scratch, "artifacts");
    const a = await agent(home, ["--save-dir", saveDir, "--artifact", "report=r.md", "--", "sh", "-c", 'mkdir -p "$LI_ARTIFACT_ROOT" && echo done > "$LI_ARTIFACT_ROOT/r.md"']);
    expect(a.record.status).toBe("completed");
    fs.rmSync(path.join(saveDir, "r.md"));
    const b = await agent(home, ["-r", a.record.branch_id, "--", "sh", "-c", `test "$LI_ARTIFACT_ROOT" = "${saveDir}"`]);
    expect(b.record).toMatchObject({ status: "failed", reason_code: "run.failed.missing_artifact" });
    const refused = await agent(home, ["-r", a.record.branch_id, "--artifact", "x=y.md", "--", "true"]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("-r");
  }, 30_000);

  test("--invocation on a resumed leg re-links the session to that invocation", async () => {
    const home = agentHome();
    const a = await agent(home, ["--invocation", "inv-first", "--", "true"]);
    expect((await sessionRow(home.db, a.record.session_id)).invocation_id).toBe("inv-first");
    const b = await agent(home, ["-r", a.record.branch_id, "--invocation", "inv-second", "--", "true"]);
    expect(b.record).toMatchObject({ session_id: a.record.session_id, status: "completed" });
    expect((await sessionRow(home.db, a.record.session_id)).invocation_id).toBe("inv-second");
  }, 30_000);

  test("an unknown branch is a usage error naming it", async () => {
    const home = agentHome();
    await agent(home, ["--", "true"]);
    const r = await agent(home, ["-r", "no-such-branch", "--", "true"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("no-such-branch");
  });

  test("an unknown branch on a machine with no ledger yet is refused before the ledger is created", async () => {
    const home = agentHome();
    const r = await agent(home, ["-r", "no-such-branch", "--", "true"]);
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split("\n")).toEqual([expect.stringContaining("no-such-branch")]);
    expect((await home.db.exists())).toBe(false);
  });
});

describe("-r takes the id the user has (§10)", () => {
  test("a session id prefix, as --detach prints it, resumes that session's current branch: two legs on one session", async () => {
    const home = agentHome();
    const detached = await li(["agent", "--detach", "--", "true"], { home: home.home });
    expect(detached.code).toBe(0);
    const sessionId = detached.stdout.trim();
    await until("the detached leg to end", async () => (await sessionRow(home.db, sessionId)).status !== "running");
    const r = await agent(home, ["-r", sessionId.slice(0, 8), "--", "true"]);
    expect(r.code).toBe(0);
    expect(r.record.session_id).toBe(sessionId);
    const legs = await rows<{ seq: number }>(home.db, "SELECT seq FROM legs WHERE session_id = ? ORDER BY seq", sessionId);
    expect(legs.map((l) => l.seq)).toEqual([1, 2]);
    const [branch] = await rows<{ id: string }>(home.db, "SELECT id FROM branches WHERE session_id = ?", sessionId);
    expect(r.record.branch_id).toBe(branch!.id);
    // The full session id resumes it too.
    expect((await agent(home, ["-r", sessionId, "--", "true"])).record.session_id).toBe(sessionId);
  });

  test("a prefix matching both a session and a branch is refused, listing both, and nothing runs", async () => {
    const home = agentHome();
    const out = path.join(home.scratch, "ran");
    const a = await agent(home, ["--", "true"]);
    // Give the branch an id sharing the session's first characters, as two random ids might.
    const twin = `${a.record.session_id.slice(0, 8)}-twin`;
    await home.db.run("UPDATE branches SET id = ? WHERE id = ?", twin, a.record.branch_id);
    const before = await rows(home.db, "SELECT id FROM legs");
    const r = await agent(home, ["-r", a.record.session_id.slice(0, 8), "--", "touch", out]);
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split("\n")).toEqual([expect.stringMatching(new RegExp(`^li: -r: .*ambiguous.*session ${a.record.session_id}.*branch ${twin}|^li: -r: .*ambiguous.*branch ${twin}.*session ${a.record.session_id}`))]);
    expect(fs.existsSync(out)).toBe(false);
    expect(await rows(home.db, "SELECT id FROM legs")).toEqual(before);
  });
});

describe("--detach -r", () => {
  test("an unknown branch fails the start with the usage error (exit 2), and nothing runs", async () => {
    const home = agentHome();
    await agent(home, ["--", "true"]);
    const r = await li(["agent", "--detach", "-r", "nope", "--", "true"], { home: home.home });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("nope");
    expect(r.stdout).toBe("");
  });

  test("prints the session id only after the reopen committed, and the detached leg's notice fires", async () => {
    const home = agentHome();
    const out = path.join(home.scratch, "notices");
    const a = await agent(home, ["--", "true"]);
    const release = path.join(home.scratch, "release");
    const r = await li(["agent", "--detach", "-r", a.record.branch_id, ...notify(out), "--", ...untilFile(release)], { home: home.home });
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe(a.record.session_id);
    // At the moment the id is printed the session is already running again.
    expect((await sessionRow(home.db, a.record.session_id)).status).toBe("running");
    expect((await history(home.db, a.record.session_id)).at(-1)).toMatchObject({ previous_status: "completed", status: "running" });
    fs.writeFileSync(release, "");
    await until("the notice", () => recorded(out).length === 1);
    expect((await sessionRow(home.db, a.record.session_id)).status).toBe("completed");
  }, 30_000);
});

describe("two legs on one session (a resume racing a live leg)", () => {
  test("each registration fires for its own leg only, and the older leg does not finalize the session", async () => {
    const home = agentHome();
    const outA = path.join(home.scratch, "a");
    const outB = path.join(home.scratch, "b");
    const releaseA = path.join(home.scratch, "release-a");
    const older = spawnLi(["agent", "--json", ...notify(outA), "--", ...untilFile(releaseA, 3)], home);
    const branch = await until("the first leg's branch", async () => (await home.db.exists()) && (await rows<{ id: string; session_id: string }>(home.db, "SELECT id, session_id FROM branches"))[0]);
    const b = await agent(home, ["-r", branch.id, ...notify(outB), "--", "true"]);
    expect(b.record).toMatchObject({ session_id: branch.session_id, status: "completed" });
    expect(recorded(outB)).toHaveLength(1);
    fs.writeFileSync(releaseA, "");
    const done = await older.out;
    // The older leg exits by the persisted winner, and only its own row carries its outcome.
    expect(JSON.parse(done.stdout)).toMatchObject({ status: "completed" });
    const legs = await rows<{ status: string; exit_code: number }>(home.db, "SELECT status, exit_code FROM legs ORDER BY seq");
    expect(legs).toEqual([{ status: "failed", exit_code: 3 }, { status: "completed", exit_code: 0 }]);
    const s = await sessionRow(home.db, branch.session_id);
    expect([s.status, s.current_leg_id, s.exit_code]).toEqual(["completed", b.record.leg_id, 0]);
    expect((await history(home.db, branch.session_id)).map((h) => h.status)).toEqual(["running", "running", "completed"]);
    expect((await li(["events", "deliver"], { home: home.home })).code).toBe(0);
    expect([recorded(outA).length, recorded(outB).length]).toEqual([0, 1]);
  }, 30_000);
});

describe("the notice of a leg (§9.1, §9.4)", () => {
  test("a leg killed between its commit and its push: li events deliver delivers the owed notice later, and only once", async () => {
    const home = agentHome();
    const out = path.join(home.scratch, "notices");
    const worker = Bun.spawn([process.execPath, path.join(import.meta.dir, "../legs/workers/kill-after-commit.ts"), home.home, `${RECORD} ${out} {status}`, "--", "true"], {
      env: liEnv(home.home),
      stdout: "pipe",
      stderr: "pipe",
    });
    const stdout = await new Response(worker.stdout).text();
    expect(await worker.exited).not.toBe(0);
    expect(worker.signalCode).toBe("SIGKILL");
    expect(JSON.parse(stdout)).toEqual({ persisted: "written" });
    expect(recorded(out)).toEqual([]);
    expect((await li(["events", "deliver"], { home: home.home })).code).toBe(0);
    expect(recorded(out)).toHaveLength(1);
    expect((await li(["events", "deliver"], { home: home.home })).code).toBe(0);
    expect(recorded(out)).toHaveLength(1);
  }, 30_000);

  test("--no-persist --notify runs the notice once with durable:false", async () => {
    const home = agentHome();
    const out = path.join(home.scratch, "notices");
    const r = await agent(home, ["--no-persist", ...notify(out), "--", "true"]);
    expect(r.code).toBe(0);
    expect(recorded(out)).toHaveLength(1);
    const envelope = JSON.parse(fs.readFileSync(`${out}.stdin`, "utf8"));
    expect(envelope).toMatchObject({ durable: false, event_id: null, terminal_status: "completed", entity: { kind: "session", id: r.record.session_id } });
    expect((await home.db.exists())).toBe(false);
  });

  test("deferred legs (--auto-resume) pass the registration on: one notice, for the leg that finalizes", async () => {
    const home = agentHome();
    const out = path.join(home.scratch, "notices");
    // The deadline is every leg's: the resume command must finish inside it, so it is far longer than a start.
    const r = await agent(home, ["--timeout", "2s", "--auto-resume", "1", "--resume-command", "true", ...notify(out), "--", fixture("forever")]);
    expect(r.record).toMatchObject({ status: "completed", legs: 2 });
    const lines = recorded(out);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain("completed session");
    expect(await rows(home.db, "SELECT leg_id FROM terminal_callbacks")).toEqual([{ leg_id: r.record.leg_id }]);
  }, 30_000);

  test("a template that needs a shell warns naming --notify and never fails the run", async () => {
    const home = agentHome();
    const r = await agent(home, ["--notify", "echo done | mail me", "--", "true"]);
    expect(r.code).toBe(0);
    expect(r.record.status).toBe("completed");
    expect(r.stderr).toContain("--notify");
    expect(await rows(home.db, "SELECT * FROM terminal_callbacks")).toEqual([]);
  });

  test("a settings template that needs a shell warns naming the key and never fails the run", async () => {
    const home = agentHome();
    fs.mkdirSync(home.home, { recursive: true });
    fs.writeFileSync(path.join(home.home, "settings.yaml"), `notify:\n  on_terminal: "notify-send done; rm -rf /tmp/x"\n`);
    const r = await agent(home, ["--", "true"]);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("notify.on_terminal");
    expect(r.stderr).not.toContain("rm -rf /tmp/x");
    expect(await rows(home.db, "SELECT * FROM terminal_callbacks")).toEqual([]);
  });

  test("the settings default applies without --notify: project over global, and --notify over both", async () => {
    const home = agentHome();
    const globalOut = path.join(home.scratch, "global");
    const projectOut = path.join(home.scratch, "project");
    const flagOut = path.join(home.scratch, "flag");
    fs.mkdirSync(home.home, { recursive: true });
    fs.writeFileSync(path.join(home.home, "settings.yaml"), `notify:\n  on_terminal: "${RECORD} ${globalOut} {status}"\n`);
    const project = path.join(home.scratch, "project-dir");
    fs.mkdirSync(path.join(project, ".li"), { recursive: true });
    fs.writeFileSync(path.join(project, ".li", "settings.yaml"), `notify:\n  on_terminal:\n    argv: ["${RECORD}", "${projectOut}", "{status}"]\n`);
    // A project handler runs only from a trusted file (§18).
    expect((await li(["trust", project], { home: home.home })).code).toBe(0);
    await agent(home, ["--", "true"]);
    expect(recorded(globalOut)).toHaveLength(1);
    await agent(home, ["--cwd", project, "--no-evidence-gate", "--", "true"]);
    expect([recorded(globalOut).length, recorded(projectOut).length]).toEqual([1, 1]);
    await agent(home, ["--cwd", project, "--no-evidence-gate", ...notify(flagOut), "--", "true"]);
    expect([recorded(globalOut).length, recorded(projectOut).length, recorded(flagOut).length]).toEqual([1, 1, 1]);
  }, 30_000);
});
