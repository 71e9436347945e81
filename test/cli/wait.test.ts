// `li wait` end to end through dist/li (§11): resolution, the frozen line, ordering, exit precedence, signals.

import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { li } from "../helpers/cli.ts";
import { fakeClock, tempDir, tempLedger, type TempLedger } from "../helpers/ledger.ts";
import { finishSession, seedSession, startWait } from "../wait/seed.ts";
import { until } from "../helpers/until.ts";
import { fixture } from "../helpers/fixtures.ts";
import { agentHome, type AgentHome } from "../legs/agent-harness.ts";

const open: TempLedger[] = [];
function ledger(): TempLedger {
  const t = tempLedger();
  open.push(t);
  return t;
}
afterEach(() => {
  for (const t of open.splice(0)) t.ledger.close();
});

const line = (id: string, status: string, reason: string, artifactDir = "-", exitCode: number | string = "-") =>
  `${id}\tstatus=${status}\treason=${reason}\tartifact_dir=${artifactDir}\texit_code=${exitCode}`;

async function invocation(t: TempLedger, id: string, status?: string, reason?: string): Promise<void> {
  await t.ledger.createEntity("invocation", { id });
  if (status) await t.ledger.updateStatus("invocation", id, { newStatus: status, reasonCode: reason! });
}

describe("li wait: resolution and the frozen line", () => {
  test("a finished session prints the frozen line with its current leg's artifact root and the command's exit code", async () => {
    const t = ledger();
    const s = await seedSession(t.ledger, { legs: [{ artifactRoot: "/old/artifacts" }, { artifactRoot: "/new/artifacts" }] });
    await finishSession(t.ledger, s.id, "failed", "run.failed.exit_nonzero", 7);
    const r = await li(["wait", s.id], { home: t.paths.home });
    expect(r.stdout).toBe(line(s.id, "failed", "run.failed.exit_nonzero", "/new/artifacts", 7) + "\n");
    expect(r.code).toBe(1);
  });

  test("a session without legs falls back to artifacts_path, and prints - when it has none", async () => {
    const t = ledger();
    const a = await seedSession(t.ledger, { artifactsPath: "/saved/here" });
    const b = await seedSession(t.ledger);
    await finishSession(t.ledger, a.id, "completed", "run.completed.ok", 0);
    await finishSession(t.ledger, b.id, "completed", "run.completed.ok", 0);
    const r = await li(["wait", a.id, b.id], { home: t.paths.home });
    expect(r.stdout.split("\n").filter(Boolean)).toEqual([line(a.id, "completed", "run.completed.ok", "/saved/here", 0), line(b.id, "completed", "run.completed.ok", "-", 0)]);
    expect(r.code).toBe(0);
  });

  test("mixed kinds in one call print one line each, already-terminal ones in input order", async () => {
    const t = ledger();
    const s = await seedSession(t.ledger, { legs: [{ artifactRoot: "/s/art" }] });
    await finishSession(t.ledger, s.id, "completed", "run.completed.ok", 0);
    await invocation(t, "inv-mixed", "completed", "run.completed.ok");
    await t.ledger.createEntity("play", { id: "play-mixed", fields: { session_id: s.id } });
    await t.ledger.updateStatus("play", "play-mixed", { newStatus: "merged", reasonCode: "play.merged.ok" });
    await t.ledger.createEntity("schedule_run", { id: "sr-mixed", status: "running" });
    await t.ledger.updateStatus("schedule_run", "sr-mixed", { newStatus: "completed", reasonCode: "run.completed.ok", extraFields: { exit_code: 0 } });
    const r = await li(["wait", "sr-mixed", "play-mixed", s.id, "inv-mixed"], { home: t.paths.home });
    expect(r.stdout.split("\n").filter(Boolean)).toEqual([
      line("sr-mixed", "completed", "run.completed.ok", "-", 0),
      line("play-mixed", "merged", "play.merged.ok", "/s/art", 0),
      line(s.id, "completed", "run.completed.ok", "/s/art", 0),
      line("inv-mixed", "completed", "run.completed.ok"),
    ]);
    expect(r.code).toBe(0);
  });

  test("an exact short id that is also a prefix of another id resolves to itself", async () => {
    const t = ledger();
    await invocation(t, "job", "completed", "run.completed.ok");
    await invocation(t, "job2", "failed", "run.failed.exit_nonzero");
    const r = await li(["wait", "job"], { home: t.paths.home });
    expect(r.stdout).toBe(line("job", "completed", "run.completed.ok") + "\n");
    expect(r.code).toBe(0);
  });

  test("an id that exists as several kinds resolves in the fixed order: invocation before play before schedule_run", async () => {
    const t = ledger();
    await t.ledger.createEntity("schedule_run", { id: "same-a", status: "running" });
    await t.ledger.updateStatus("schedule_run", "same-a", { newStatus: "cancelled", reasonCode: "run.cancelled.system" });
    await t.ledger.createEntity("play", { id: "same-a" });
    await t.ledger.updateStatus("play", "same-a", { newStatus: "merged", reasonCode: "play.merged.ok" });
    await invocation(t, "same-a", "failed", "run.failed.exit_nonzero");
    await t.ledger.createEntity("schedule_run", { id: "same-b", status: "running" });
    await t.ledger.updateStatus("schedule_run", "same-b", { newStatus: "cancelled", reasonCode: "run.cancelled.system" });
    await t.ledger.createEntity("play", { id: "same-b" });
    await t.ledger.updateStatus("play", "same-b", { newStatus: "merged", reasonCode: "play.merged.ok" });
    const r = await li(["wait", "--json", "same-a", "same-b"], { home: t.paths.home });
    expect(r.stdout.trim().split("\n").map((l) => [JSON.parse(l).kind, JSON.parse(l).status])).toEqual([["invocation", "failed"], ["play", "merged"]]);
  });

  test("an exact session id wins over a branch id and a run id that are the same string", async () => {
    const t = ledger();
    const other = await seedSession(t.ledger, { branchId: "shared-name", legs: [{ runId: "shared-name" }] });
    await finishSession(t.ledger, other.id, "failed", "run.failed.exit_nonzero", 1);
    const own = await seedSession(t.ledger, { id: "shared-name" });
    await finishSession(t.ledger, own.id, "completed", "run.completed.ok", 0);
    const r = await li(["wait", "shared-name"], { home: t.paths.home });
    expect(r.stdout).toBe(line("shared-name", "completed", "run.completed.ok", "-", 0) + "\n");
  });

  test("a unique prefix resolves across kinds and prints the canonical id", async () => {
    const t = ledger();
    const s = await seedSession(t.ledger, { id: "5e551011-aaaa-4bbb-8ccc-000000000001" });
    await finishSession(t.ledger, s.id, "completed", "run.completed.ok", 0);
    const r = await li(["wait", "5e551011"], { home: t.paths.home });
    expect(r.stdout).toBe(line(s.id, "completed", "run.completed.ok", "-", 0) + "\n");
  });

  test("ids split on commas and spaces, trimmed and de-duplicated in first-seen order", async () => {
    const t = ledger();
    await invocation(t, "inv-a", "completed", "run.completed.ok");
    await invocation(t, "inv-b", "completed", "run.completed.ok");
    const r = await li(["wait", " inv-b , inv-a", "inv-b,,", "inv-a"], { home: t.paths.home });
    expect(r.stdout.split("\n").filter(Boolean)).toEqual([line("inv-b", "completed", "run.completed.ok"), line("inv-a", "completed", "run.completed.ok")]);
    expect(r.code).toBe(0);
  });

  test("a 36-character id that would only match as a prefix is not found", async () => {
    const t = ledger();
    const long = "0123456789abcdef0123456789abcdef0123-tail";
    await invocation(t, long, "completed", "run.completed.ok");
    const r = await li(["wait", long.slice(0, 36)], { home: t.paths.home });
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain(`no run, session or branch matches '${long.slice(0, 36)}'`);
    expect(r.code).toBe(2);
  });

  test("an ambiguous prefix is reported on stderr, prints no line, and exits 2", async () => {
    const t = ledger();
    await invocation(t, "amb-1", "completed", "run.completed.ok");
    await invocation(t, "amb-2", "completed", "run.completed.ok");
    const r = await li(["wait", "amb-"], { home: t.paths.home });
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain("ambiguous");
    expect(r.code).toBe(2);
  });

  test("an ambiguity between kinds counts too (a session and a branch sharing a prefix)", async () => {
    const t = ledger();
    const s = await seedSession(t.ledger, { id: "cafe0001-0000-4000-8000-000000000001", branchId: "cafe0002-0000-4000-8000-000000000002" });
    await finishSession(t.ledger, s.id, "completed", "run.completed.ok", 0);
    const r = await li(["wait", "cafe000"], { home: t.paths.home });
    expect(r.stdout).toBe("");
    expect(r.code).toBe(2);
  });

  test("not found goes to stderr only", async () => {
    const t = ledger();
    await invocation(t, "inv-here", "completed", "run.completed.ok");
    const r = await li(["wait", "nope-nothing", "inv-here"], { home: t.paths.home });
    expect(r.stdout).toBe(line("inv-here", "completed", "run.completed.ok") + "\n");
    expect(r.stderr).toContain("no run, session or branch matches 'nope-nothing'");
    expect(r.code).toBe(2);
  });

  test("a stored reason outside the vocabulary prints reason=unknown", async () => {
    const t = ledger();
    await invocation(t, "inv-bogus", "completed", "run.completed.ok");
    await t.rows().run( "UPDATE invocations SET status_reason_code = 'made.up.code' WHERE id = ?", "inv-bogus");
    const r = await li(["wait", "inv-bogus"], { home: t.paths.home });
    expect(r.stdout).toBe(line("inv-bogus", "completed", "unknown") + "\n");
  });

  test("a play reports its session's artifact root and exit code", async () => {
    const t = ledger();
    const s = await seedSession(t.ledger, { legs: [{ artifactRoot: "/play/art" }] });
    await finishSession(t.ledger, s.id, "completed", "run.completed.ok", 0);
    await t.ledger.createEntity("play", { id: "play-1", fields: { session_id: s.id } });
    await t.ledger.updateStatus("play", "play-1", { newStatus: "gate_failed", reasonCode: "play.gate_failed.checks" });
    const r = await li(["wait", "play-1"], { home: t.paths.home });
    expect(r.stdout).toBe(line("play-1", "gate_failed", "play.gate_failed.checks", "/play/art", 0) + "\n");
    expect(r.code).toBe(1);
  });

  test("a play or schedule_run with its own recorded exit code reports that one, not its session's", async () => {
    const t = ledger();
    await invocation(t, "inv-own");
    const s = await seedSession(t.ledger, { invocationId: "inv-own", legs: [{ artifactRoot: "/own/art" }] });
    await finishSession(t.ledger, s.id, "completed", "run.completed.ok", 0);
    await t.ledger.createEntity("play", { id: "play-own", fields: { session_id: s.id } });
    await t.ledger.updateStatus("play", "play-own", { newStatus: "blocked", reasonCode: "play.blocked.runner_orphaned", extraFields: { exit_code: 9 } });
    await t.ledger.createEntity("schedule_run", { id: "sr-own", status: "running", fields: { invocation_id: "inv-own" } });
    await t.ledger.updateStatus("schedule_run", "sr-own", { newStatus: "failed", reasonCode: "run.failed.exit_nonzero", extraFields: { exit_code: 4 } });
    const r = await li(["wait", "play-own", "sr-own"], { home: t.paths.home });
    expect(r.stdout.split("\n").filter(Boolean)).toEqual([line("play-own", "blocked", "play.blocked.runner_orphaned", "/own/art", 9), line("sr-own", "failed", "run.failed.exit_nonzero", "/own/art", 4)]);
    expect(r.code).toBe(1);
  });

  test("a schedule_run and an invocation report the invocation's most recently updated session", async () => {
    const clock = fakeClock(Date.now() / 1000 - 3600);
    const t = tempLedger({ now: clock.now });
    open.push(t);
    await invocation(t, "inv-sr", "completed", "run.completed.ok");
    const newer = await seedSession(t.ledger, { invocationId: "inv-sr", legs: [{ artifactRoot: "/newer/art" }] });
    const older = await seedSession(t.ledger, { invocationId: "inv-sr", legs: [{ artifactRoot: "/older/art" }] });
    clock.advance(10);
    await finishSession(t.ledger, older.id, "failed", "run.failed.exit_nonzero", 1);
    clock.advance(10);
    await finishSession(t.ledger, newer.id, "completed", "run.completed.ok", 0);
    await t.ledger.createEntity("schedule_run", { id: "sr-1", status: "running", fields: { invocation_id: "inv-sr" } });
    await t.ledger.updateStatus("schedule_run", "sr-1", { newStatus: "completed", reasonCode: "run.completed.ok" });
    const r = await li(["wait", "sr-1", "inv-sr"], { home: t.paths.home });
    expect(r.stdout.split("\n").filter(Boolean)).toEqual([line("sr-1", "completed", "run.completed.ok", "/newer/art", 0), line("inv-sr", "completed", "run.completed.ok", "/newer/art", 0)]);
    expect(r.code).toBe(0);
  });

  test("a branch id and a run id resolve to their session", async () => {
    const t = ledger();
    const s = await seedSession(t.ledger, { legs: [{ runId: "20261129T230000-abc123", artifactRoot: "/b/art" }] });
    await finishSession(t.ledger, s.id, "completed", "run.completed.ok", 0);
    const byBranch = await li(["wait", s.branchId], { home: t.paths.home });
    expect(byBranch.stdout).toBe(line(s.id, "completed", "run.completed.ok", "/b/art", 0) + "\n");
    const byRun = await li(["wait", "20261129T230000-abc123"], { home: t.paths.home });
    expect(byRun.stdout).toBe(line(s.id, "completed", "run.completed.ok", "/b/art", 0) + "\n");
    expect(byBranch.code + byRun.code).toBe(0);
  });

  test("--json prints one object per finished target with the documented fields", async () => {
    const t = ledger();
    const s = await seedSession(t.ledger, { legs: [{ artifactRoot: "/j/art" }] });
    await finishSession(t.ledger, s.id, "completed_empty", "run.completed_empty.no_evidence", 0);
    const r = await li(["wait", "--json", s.branchId], { home: t.paths.home });
    expect(r.stdout.trim().split("\n").map((l) => JSON.parse(l))).toEqual([
      { id: s.id, kind: "session", input: s.branchId, status: "completed_empty", reason: "run.completed_empty.no_evidence", artifact_dir: "/j/art", exit_code: 0, success: false },
    ]);
    expect(r.code).toBe(1);
  });
});

describe("li wait --json ordering", () => {
  test("--json objects come in the same order as the lines: already-terminal in input order, then completion order", async () => {
    const t = ledger();
    await invocation(t, "j-done-2", "completed", "run.completed.ok");
    await invocation(t, "j-done-1", "failed", "run.failed.exit_nonzero");
    await invocation(t, "j-later");
    const w = startWait(["--json", "j-later", "j-done-2", "j-done-1"], t.paths.home);
    await w.lines(2);
    await t.ledger.updateStatus("invocation", "j-later", { newStatus: "completed", reasonCode: "run.completed.ok" });
    const end = await w.done();
    expect(end.stdout.map((l) => JSON.parse(l).id)).toEqual(["j-done-2", "j-done-1", "j-later"]);
    expect(end.code).toBe(1);
  });
});

describe("li wait: exit codes", () => {
  test("precedence with mixed outcomes: unsuccessful → 1, plus not found → 2, plus timeout → 3", async () => {
    const t = ledger();
    await invocation(t, "ok-1", "completed", "run.completed.ok");
    await invocation(t, "bad-1", "cancelled", "run.cancelled.sigterm");
    await invocation(t, "still-running");
    expect((await li(["wait", "ok-1"], { home: t.paths.home })).code).toBe(0);
    expect((await li(["wait", "ok-1", "bad-1"], { home: t.paths.home })).code).toBe(1);
    expect((await li(["wait", "ok-1", "bad-1", "missing-1"], { home: t.paths.home })).code).toBe(2);
    // The deadline covers the lookup and the first read, which print the two finished lines. On PostgreSQL
    // those are round trips the deadline races (on SQLite they end before any timer can fire): 300 ms, as
    // short as the work on a loaded machine, could cut the second line.
    const all = await li(["wait", "--timeout", "2s", "ok-1", "bad-1", "missing-1", "still-running"], { home: t.paths.home });
    expect(all.code).toBe(3);
    expect(all.stdout.split("\n").filter(Boolean)).toHaveLength(2);
  });

  test("--timeout reached → 3, with no line for the unfinished target", async () => {
    const t = ledger();
    await invocation(t, "slow-1");
    const r = await li(["wait", "--timeout", "200ms", "slow-1"], { home: t.paths.home });
    expect(r.code).toBe(3);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain("--timeout");
  });

  test("a missing database → 2, and no ledger file is created", async () => {
    const home = join(tempDir(), "home");
    const r = await li(["wait", "anything"], { home });
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain("nothing recorded yet");
    expect(existsSync(join(home, "state.db"))).toBe(false);
    expect(existsSync(home)).toBe(false);
  });

  test("--interval must be positive, and bad flags are usage errors", async () => {
    const t = ledger();
    await invocation(t, "inv-i", "completed", "run.completed.ok");
    for (const bad of ["0", "-1", "abc"]) {
      const r = await li(["wait", "--interval", bad, "inv-i"], { home: t.paths.home });
      expect(r.code).toBe(2);
      expect(r.stderr).toContain("--interval");
      expect(r.stdout).toBe("");
    }
    expect((await li(["wait", "--timeout", "soon", "inv-i"], { home: t.paths.home })).code).toBe(2);
    expect((await li(["wait", ","], { home: t.paths.home })).code).toBe(2);
  });

  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    test(`${signal} while waiting → 3, keeping the lines already printed`, async () => {
      const t = ledger();
      await invocation(t, "done-first", "completed", "run.completed.ok");
      await invocation(t, "never-ends");
      const w = startWait(["done-first", "never-ends"], t.paths.home);
      // The first line proves the waiter resolved both ids and is now blocked on the second.
      expect(await w.lines(1)).toEqual([line("done-first", "completed", "run.completed.ok")]);
      w.proc.kill(signal);
      const end = await w.done();
      expect(end.code).toBe(3);
      expect(end.stdout).toHaveLength(1);
    });
  }
});

describe("li wait: while waiting", () => {
  test("lines are printed in completion order, not input order", async () => {
    const t = ledger();
    await invocation(t, "sentinel-c", "completed", "run.completed.ok");
    const a = await seedSession(t.ledger);
    const b = await seedSession(t.ledger);
    const w = startWait([a.id, b.id, "sentinel-c"], t.paths.home);
    await w.lines(1);
    await finishSession(t.ledger, b.id, "completed", "run.completed.ok", 0);
    await w.lines(2);
    await finishSession(t.ledger, a.id, "failed", "run.failed.exit_nonzero", 3);
    const end = await w.done();
    expect(end.stdout).toEqual([
      line("sentinel-c", "completed", "run.completed.ok"),
      line(b.id, "completed", "run.completed.ok", "-", 0),
      line(a.id, "failed", "run.failed.exit_nonzero", "-", 3),
    ]);
    expect(end.code).toBe(1);
  });

  test("a row deleted while waited on prints a status=unknown line and exits 2", async () => {
    const t = ledger();
    await invocation(t, "sentinel-d", "completed", "run.completed.ok");
    await invocation(t, "doomed");
    const w = startWait(["sentinel-d", "doomed"], t.paths.home);
    await w.lines(1);
    await t.rows().run( "DELETE FROM invocations WHERE id = ?", "doomed");
    const end = await w.done();
    expect(end.stdout).toEqual([line("sentinel-d", "completed", "run.completed.ok"), line("doomed", "unknown", "unknown")]);
    expect(end.stderr).toContain("deleted");
    expect(end.code).toBe(2);
  });

  test("another process finishing the target wakes li wait: its hour-long poll never fires within the test", async () => {
    const t = ledger();
    await invocation(t, "sentinel-w", "completed", "run.completed.ok");
    await invocation(t, "woken");
    // The safety poll is an hour away, past the test's own timeout: a wait that ends at all was woken by the
    // commit (no clock threshold that a loaded machine could cross).
    const w = startWait(["--interval", "1h", "sentinel-w", "woken"], t.paths.home);
    await w.lines(1);
    const writer = await li(["state", "set-status", "invocation", "woken", "--status", "completed", "--reason", "run.completed.ok"], { home: t.paths.home });
    expect(writer.code).toBe(0);
    try {
      await until("li wait to be woken by the commit", () => w.proc.exitCode !== null, { timeoutMs: 30_000 });
    } finally {
      w.proc.kill("SIGKILL"); // only a wait that was never woken is still there
    }
    const end = await w.done();
    expect(end.stdout).toEqual([line("sentinel-w", "completed", "run.completed.ok"), line("woken", "completed", "run.completed.ok")]);
    expect(end.code).toBe(0);
  }, 40_000);

  test("with file watching off (LI_WATCH_FILES=0) the safety poll still finishes the wait", async () => {
    const t = ledger();
    await invocation(t, "sentinel-p", "completed", "run.completed.ok");
    await invocation(t, "polled");
    const w = startWait(["--interval", "0.1", "sentinel-p", "polled"], t.paths.home, { LI_WATCH_FILES: "0" });
    await w.lines(1);
    await t.ledger.updateStatus("invocation", "polled", { newStatus: "completed", reasonCode: "run.completed.ok" });
    const end = await w.done();
    expect(end.stdout[1]).toBe(line("polled", "completed", "run.completed.ok"));
    expect(await t.rows().exists()).toBe(true);
  });
});

describe("li wait on real `li agent` legs", () => {
  async function agent(home: AgentHome, args: string[]): Promise<{ code: number; record: { session_id: string; branch_id: string; run_id: string } }> {
    const r = await li(["agent", "--json", ...args], { home: home.home });
    return { code: r.code, record: JSON.parse(r.stdout) };
  }

  test("a detached leg waited on by its branch id and by its run id: both wake when it ends and print its session's line", async () => {
    const home = agentHome();
    const sentinel = await agent(home, ["--", "true"]);
    const go = join(home.scratch, "go");
    const started = await li(["agent", "--detach", "--json", "--", "sh", "-c", 'while [ ! -e "$1" ]; do sleep 0.02; done; exit 3', "leg", go], { home: home.home });
    expect(started.code).toBe(0);
    const leg = JSON.parse(started.stdout) as { session_id: string; branch_id: string; run_id: string };
    // The interval is 30 s: only a wake-up on the commit can finish these waits within the test.
    const byBranch = startWait(["--interval", "30", sentinel.record.session_id, leg.branch_id], home.home);
    const byRun = startWait(["--interval", "30", sentinel.record.session_id, leg.run_id], home.home);
    await byBranch.lines(1);
    await byRun.lines(1);
    writeFileSync(go, "");
    const expected = line(leg.session_id, "failed", "run.failed.exit_nonzero", join(home.runs, leg.run_id, "artifacts"), 3);
    for (const w of [byBranch, byRun]) {
      const end = await w.done();
      expect(end.stdout).toEqual([line(sentinel.record.session_id, "completed", "run.completed.ok", join(home.runs, sentinel.record.run_id, "artifacts"), 0), expected]);
      expect(end.code).toBe(1);
    }
  }, 60_000);

  test("after a resume with --save-dir, artifact_dir is the new current leg's root, even when waited on by the first leg's run id", async () => {
    const home = agentHome();
    const first = await agent(home, ["--", fixture("exit-with"), "0"]);
    const saveDir = join(home.scratch, "second-artifacts");
    const second = await agent(home, ["-r", first.record.branch_id, "--save-dir", saveDir, "--", fixture("exit-with"), "5"]);
    expect(second.record.session_id).toBe(first.record.session_id);
    const expected = line(first.record.session_id, "failed", "run.failed.exit_nonzero", saveDir, 5) + "\n";
    for (const id of [first.record.run_id, second.record.run_id, first.record.session_id, first.record.branch_id]) {
      const r = await li(["wait", id], { home: home.home });
      expect(r.stdout).toBe(expected);
      expect(r.code).toBe(1);
    }
  }, 60_000);

  test("exit_code is the command's own, never li's mapped exit: 137 when SIGKILL ended it, 143 on a timeout, 127 when it could not start (as a shell says)", async () => {
    const home = agentHome();
    const killed = await agent(home, ["--", fixture("kill-self"), "KILL"]);
    const timedOut = await agent(home, ["--timeout", "300ms", "--", fixture("forever")]);
    const neverRan = await agent(home, ["--", join(home.scratch, "no-such-program")]);
    expect([killed.code, timedOut.code, neverRan.code]).toEqual([1, 124, 127]);
    const r = await li(["wait", killed.record.session_id, timedOut.record.session_id, neverRan.record.session_id], { home: home.home });
    const fields = r.stdout.trim().split("\n").map((l) => l.split("\t").filter((f) => f.startsWith("status=") || f.startsWith("exit_code=")));
    expect(fields).toEqual([
      ["status=failed", "exit_code=137"],
      ["status=timed_out", "exit_code=143"],
      ["status=failed", "exit_code=127"],
    ]);
    expect(r.code).toBe(1);
  }, 60_000);

  test("an invocation and its schedule_run report the artifact root and exit code of the invocation's real leg", async () => {
    const home = agentHome();
    expect((await li(["state", "create", "invocation", "--id", "inv-real"], { home: home.home })).code).toBe(0);
    const leg = await agent(home, ["--invocation", "inv-real", "--", fixture("exit-with"), "0"]);
    expect((await li(["state", "create", "schedule_run", "--id", "sr-real", "--invocation", "inv-real", "--status", "running"], { home: home.home })).code).toBe(0);
    for (const [kind, id] of [["invocation", "inv-real"], ["schedule_run", "sr-real"]]) {
      expect((await li(["state", "set-status", kind!, id!, "--status", "completed", "--reason", "run.completed.ok"], { home: home.home })).code).toBe(0);
    }
    const r = await li(["wait", "sr-real,inv-real"], { home: home.home });
    const art = join(home.runs, leg.record.run_id, "artifacts");
    expect(r.stdout.split("\n").filter(Boolean)).toEqual([line("sr-real", "completed", "run.completed.ok", art, 0), line("inv-real", "completed", "run.completed.ok", art, 0)]);
    expect(r.code).toBe(0);
  }, 60_000);
});
