// `li ls` end to end (§13): ordering, filters, the current leg's age and duration, short ids, TTY vs pipe, JSON.

import { afterEach, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { li, LI_BINARY, liEnv } from "../helpers/cli.ts";
import { fakeClock, tempDir, tempLedger, type TempLedger } from "../helpers/ledger.ts";
import { ledgerRows } from "../helpers/ledger-rows.ts";
import { finishSession, seedSession } from "../wait/seed.ts";
import { fixture } from "../helpers/fixtures.ts";
import { agentHome } from "../legs/agent-harness.ts";

const open: TempLedger[] = [];
afterEach(() => {
  for (const t of open.splice(0)) t.ledger.close();
});

const HOUR = 3600;

/** A ledger whose clock starts `hoursAgo` before the real now, so rows are backdated, never slept for. */
function backdated(hoursAgo: number) {
  const clock = fakeClock(Date.now() / 1000 - hoursAgo * HOUR);
  const t = tempLedger({ now: clock.now });
  open.push(t);
  return { t, clock };
}

async function lsJson(t: TempLedger, ...args: string[]): Promise<Record<string, any>[]> {
  const r = await li(["ls", "--json", ...args], { home: t.paths.home });
  expect(r.code).toBe(0);
  return JSON.parse(r.stdout).entities;
}

describe("li ls", () => {
  test("lists newest first, by last update, across kinds", async () => {
    const { t, clock } = backdated(3);
    await t.ledger.createEntity("invocation", { id: "inv-old" });
    clock.advance(HOUR);
    await t.ledger.createEntity("play", { id: "play-mid" });
    clock.advance(HOUR);
    const s = await seedSession(t.ledger);
    expect((await lsJson(t)).map((e) => e.id)).toEqual([s.id, "play-mid", "inv-old"]);
  });

  test("--kind, --status, --since and --limit filter the list", async () => {
    const { t, clock } = backdated(5);
    await t.ledger.createEntity("invocation", { id: "inv-5h" });
    clock.advance(3 * HOUR);
    await t.ledger.createEntity("invocation", { id: "inv-2h" });
    await t.ledger.updateStatus("invocation", "inv-2h", { newStatus: "failed", reasonCode: "run.failed.exit_nonzero" });
    clock.advance(HOUR);
    await t.ledger.createEntity("play", { id: "play-1h" });
    expect((await lsJson(t, "--kind", "invocation")).map((e) => e.id)).toEqual(["inv-2h", "inv-5h"]);
    expect((await lsJson(t, "--status", "failed")).map((e) => e.id)).toEqual(["inv-2h"]);
    expect((await lsJson(t, "--since", "150m")).map((e) => e.id)).toEqual(["play-1h", "inv-2h"]);
    expect((await lsJson(t, "--limit", "1")).map((e) => e.id)).toEqual(["play-1h"]);
  });

  test("age and duration are the current leg's, never the resumed session's started_at", async () => {
    const { t, clock } = backdated(72);
    const now = Date.now() / 1000;
    const s = await seedSession(t.ledger, {
      startedAt: now - 72 * HOUR,
      legs: [
        { startedAt: now - 72 * HOUR, endedAt: now - 72 * HOUR + 60, command: ["old", "leg"] },
        { startedAt: now - 2 * HOUR, command: ["agent", "--task", "two words"] },
      ],
    });
    clock.set(now);
    const [entry] = await lsJson(t);
    expect(entry!.id).toBe(s.id);
    expect(entry!.legs).toBe(2);
    expect(entry!.command).toEqual(["agent", "--task", "two words"]);
    expect(entry!.age_seconds).toBeGreaterThanOrEqual(2 * HOUR);
    expect(entry!.age_seconds).toBeLessThan(3 * HOUR);
    expect(entry!.duration_seconds).toBeGreaterThanOrEqual(2 * HOUR);
    const text = await li(["ls"], { home: t.paths.home });
    const row = text.stdout.split("\n")[1]!;
    // Columns: ID KIND STATUS REASON AGE DURATION LEGS BRANCH COMMAND (the random id must not be searched for "3d").
    const [, , , , age, duration, legs, branch, command] = row.split(/ {2,}/);
    expect(s.branchId.startsWith(branch!)).toBe(true);
    expect([age, duration, legs]).toEqual(["2h00m", "2h00m", "2"]);
    expect(command).toBe("agent --task 'two words'");
  });

  test("a finished leg's duration stops at its end", async () => {
    const { t } = backdated(1);
    const now = Date.now() / 1000;
    const s = await seedSession(t.ledger, { legs: [{ startedAt: now - 600, endedAt: now - 480 }] });
    await finishSession(t.ledger, s.id, "completed", "run.completed.ok", 0);
    const [entry] = await lsJson(t);
    expect(entry!.duration_seconds).toBeCloseTo(120, 3);
  });

  test("ids are shown by their shortest unique prefix, at least 8 characters", async () => {
    const { t } = backdated(1);
    const a = await seedSession(t.ledger, { id: "abcdef0123-0000-4000-8000-00000000000a" });
    const b = await seedSession(t.ledger, { id: "abcdef0124-0000-4000-8000-00000000000b" });
    const c = await seedSession(t.ledger, { id: "99990000-0000-4000-8000-00000000000c" });
    const short = Object.fromEntries((await lsJson(t)).map((e) => [e.id, e.short_id]));
    expect(short[a.id]).toBe("abcdef0123");
    expect(short[b.id]).toBe("abcdef0124");
    expect(short[c.id]).toBe("99990000");
    // The short id is usable: li wait resolves it to its session. (Finished first, so the wait answers at
    // once: with a 50 ms --timeout on a running one, a lookup the deadline cut short passed as well.)
    await finishSession(t.ledger, a.id, "completed", "run.completed.ok", 0);
    const waited = await li(["wait", short[a.id]!], { home: t.paths.home });
    expect({ code: waited.code, id: waited.stdout.split("\t")[0], stderr: waited.stderr }).toEqual({ code: 0, id: a.id, stderr: "" });
  });

  test("--since counts back from the ledger's clock, whatever this host's clock says (an hour ahead or behind)", async () => {
    // On SQLite the ledger's clock is this host's (skewed alike for every command); on PostgreSQL it is the
    // server's, so a cutoff on the skewed host clock would hide the fresh row (ahead) or show the old one (behind).
    for (const skew of [HOUR, -HOUR]) {
      const home = join(tempDir(), "home");
      const env = { LI_TEST_CLOCK_SKEW: String(skew) };
      for (const id of ["inv-fresh", "inv-old"]) expect((await li(["state", "create", "invocation", "--id", id], { home, env })).code).toBe(0);
      // Ten minutes older than the fresh row, on whatever clock wrote both.
      expect(await ledgerRows(home).run("UPDATE invocations SET updated_at = updated_at - 600 WHERE id = ?", "inv-old")).toBe(1);
      const r = await li(["ls", "--json", "--since", "5m"], { home, env });
      expect(r.code).toBe(0);
      expect({ skew, ids: JSON.parse(r.stdout).entities.map((e: { id: string }) => e.id) }).toEqual({ skew, ids: ["inv-fresh"] });
    }
  });

  test("piped output has no colour; a TTY gets colour unless NO_COLOR is set", async () => {
    const { t } = backdated(1);
    await t.ledger.createEntity("invocation", { id: "inv-colour" });
    const piped = Bun.spawnSync([LI_BINARY, "ls"], { env: liEnv(t.paths.home, { NO_COLOR: undefined }) });
    expect(piped.stdout.toString()).toContain("inv-colo");
    expect(piped.stdout.toString()).not.toContain("\x1b[");
    // `script` gives li a pseudo-terminal as stdout.
    const onTty = (env: Record<string, string | undefined>) =>
      Bun.spawnSync(["script", "-qec", `${LI_BINARY} ls`, "/dev/null"], { env: liEnv(t.paths.home, { TERM: "xterm", ...env }) }).stdout.toString();
    expect(onTty({ NO_COLOR: undefined })).toContain("\x1b[");
    expect(onTty({ NO_COLOR: "1" })).not.toContain("\x1b[");
  });

  test("--json has the documented shape", async () => {
    const { t } = backdated(1);
    await t.ledger.createEntity("invocation", { id: "inv-json" });
    const [entry] = await lsJson(t);
    expect(Object.keys(entry!).sort()).toEqual(["age_seconds", "branch_id", "command", "created_at", "duration_seconds", "host_id", "host_name", "id", "kind", "legs", "reason", "resource_use", "schedule", "short_id", "spooled", "status", "updated_at"].sort());
    expect(entry).toMatchObject({ id: "inv-json", short_id: "inv-json", kind: "invocation", status: "running", reason: "run.started.ok", legs: null, command: null });
  });

  test("bad flags are usage errors naming the flag; a missing ledger → 2 and is not created", async () => {
    const { t } = backdated(1);
    await t.ledger.createEntity("invocation", { id: "inv-x" });
    for (const [flag, value] of [["--kind", "bogus"], ["--status", "bogus"], ["--limit", "0"], ["--limit", "1.5"], ["--since", "soon"]] as const) {
      const r = await li(["ls", flag, value], { home: t.paths.home });
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(flag);
    }
    const stray = await li(["ls", "inv-x"], { home: t.paths.home });
    expect(stray.code).toBe(2);
    expect(stray.stdout).toBe("");
    expect(stray.stderr).toContain("'inv-x'");
    const home = join(tempDir(), "home");
    const r = await li(["ls"], { home });
    expect(r.code).toBe(2);
    expect(existsSync(join(home, "state.db"))).toBe(false);
  });
});

describe("li ls on real `li agent` legs", () => {
  test("a resumed session counts both legs and shows the current leg's command; --kind session lists only sessions", async () => {
    const home = agentHome();
    expect((await li(["state", "create", "invocation", "--id", "inv-beside"], { home: home.home })).code).toBe(0);
    const first = JSON.parse((await li(["agent", "--json", "--", fixture("exit-with"), "0"], { home: home.home })).stdout);
    const second = await li(["agent", "--json", "-r", first.branch_id, "--", fixture("exit-with"), "4"], { home: home.home });
    expect(second.code).toBe(1);
    const r = await li(["ls", "--json", "--kind", "session"], { home: home.home });
    const entities = JSON.parse(r.stdout).entities;
    expect(entities).toHaveLength(1);
    expect(entities[0]).toMatchObject({ id: first.session_id, kind: "session", status: "failed", reason: "run.failed.exit_nonzero", legs: 2, command: [fixture("exit-with"), "4"] });
    const text = await li(["ls"], { home: home.home });
    const [id, kind, status, , , , legs, , command] = text.stdout.split("\n")[1]!.split(/ {2,}/);
    expect([id, kind, status, legs, command]).toEqual([first.session_id.slice(0, 8), "session", "failed", "2", `${fixture("exit-with")} 4`]);
  }, 60_000);
});

describe("li ls: the branch and the terminal's width", () => {
  async function sessionWithLongCommand() {
    const { t } = backdated(1);
    const s = await seedSession(t.ledger, { legs: [{ command: ["make", "--jobs", "8", "x".repeat(200)] }] });
    return { t, s };
  }

  test("--json carries each session's branch id (null for other kinds)", async () => {
    const { t, s } = await sessionWithLongCommand();
    await t.ledger.createEntity("play", { id: "play-no-branch" });
    const byId = Object.fromEntries((await lsJson(t)).map((e) => [e.id, e]));
    expect(byId[s.id]!.branch_id).toBe(s.branchId);
    expect(byId["play-no-branch"]!.branch_id).toBeNull();
  });

  test("under COLUMNS rows fit the width: the command is cut with …, never the id; BRANCH appears only when wide", async () => {
    const { t, s } = await sessionWithLongCommand();
    for (const columns of [80, 100, 200]) {
      const r = await li(["ls"], { home: t.paths.home, env: { COLUMNS: String(columns) } });
      expect(r.code).toBe(0);
      const lines = r.stdout.trimEnd().split("\n");
      for (const line of lines) expect(line.length).toBeLessThanOrEqual(columns);
      expect(lines[1]!.startsWith(s.id.slice(0, 8))).toBe(true);
      expect(lines[1]!.endsWith("…")).toBe(true);
      if (columns !== 100) expect(lines[0]!.includes("BRANCH")).toBe(columns >= 110);
      if (columns !== 100) expect(lines[1]!.includes(s.branchId.slice(0, 8))).toBe(columns >= 110);
    }
    // Into a pipe with no COLUMNS, nothing is cut and BRANCH is shown.
    const piped = await li(["ls"], { home: t.paths.home, env: { COLUMNS: undefined } });
    expect(piped.stdout).toContain("x".repeat(200));
    expect(piped.stdout.split("\n")[0]).toContain("BRANCH");
  });

  test("on 80 columns even the widest kind, status and reason fit: the reason is cut after the command, never the id", async () => {
    const { t, s } = await sessionWithLongCommand();
    await finishSession(t.ledger, s.id, "completed_empty", "run.completed_empty.no_evidence", 0);
    await t.ledger.createEntity("schedule_run", { id: "sched-1" });
    const r = await li(["ls"], { home: t.paths.home, env: { COLUMNS: "80" } });
    expect(r.code).toBe(0);
    const lines = r.stdout.trimEnd().split("\n");
    expect(lines).toHaveLength(3);
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(80);
    const session = lines.find((l) => l.startsWith(s.id.slice(0, 8)))!;
    expect(session).toMatch(/^\S{8} +session +completed_empty +run\.complet\S*… /);
    expect(session.endsWith("…")).toBe(true);
    expect(lines.some((l) => l.startsWith("sched-1 "))).toBe(true);
    // Wide enough, nothing is cut but the command.
    const wide = await li(["ls"], { home: t.paths.home, env: { COLUMNS: "160" } });
    expect(wide.stdout).toContain(" run.completed_empty.no_evidence ");
  });

  test("on 80 columns the command keeps 20 columns: BRANCH and AGE are left out first, then the reason is cut", async () => {
    const { t, s } = await sessionWithLongCommand();
    await finishSession(t.ledger, s.id, "failed", "run.failed.exit_nonzero", 2);
    const r = await li(["ls"], { home: t.paths.home, env: { COLUMNS: "80" } });
    const [header, row] = r.stdout.trimEnd().split("\n");
    expect(header!.split(/ +/)).toEqual(["ID", "KIND", "STATUS", "REASON", "DURATION", "LEGS", "COMMAND"]);
    expect(row!.length).toBeLessThanOrEqual(80);
    const command = row!.slice(header!.indexOf("COMMAND"));
    expect(command.length).toBeGreaterThanOrEqual(20);
    expect(command).toStartWith("make --jobs 8 x");
  });

  test("--status with a word that is no status lists the statuses of the kinds shown", async () => {
    const { t } = backdated(1);
    await seedSession(t.ledger, {});
    const one = await li(["ls", "--kind", "session", "--status", "bogus"], { home: t.paths.home });
    expect(one.code).toBe(2);
    expect(one.stderr).toBe("li: --status: 'bogus' is not a status of session (one of running, completed, completed_empty, failed, timed_out, aborted, cancelled)\n");
    const all = await li(["ls", "--status", "bogus"], { home: t.paths.home });
    expect(all.code).toBe(2);
    expect(all.stderr).toMatch(/^li: --status: 'bogus' is not a status of any kind \(one of running, .*merged.*\)\n$/);
  });

  test("on a pseudo-terminal the rows fit the terminal's own width", async () => {
    const { t, s } = await sessionWithLongCommand();
    const r = Bun.spawnSync(["script", "-qfec", `stty cols 90 rows 40; ${LI_BINARY} ls`, "/dev/null"], { env: liEnv(t.paths.home, { COLUMNS: undefined }), stdout: "pipe", stderr: "pipe" });
    const lines = r.stdout.toString().replace(/\r/g, "").trimEnd().split("\n");
    expect(lines[1]!.startsWith(s.id.slice(0, 8))).toBe(true);
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(90);
    expect(lines[0]).not.toContain("BRANCH");
  });
});
