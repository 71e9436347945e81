// §17 on SQLite with a real second writer: another connection holds the write lock past the busy timeout
// while a leg ends. Released while li retries → the outcome lands once; held past --ledger-retry → it is
// spooled, li exits by the command's outcome, and `li watch --once` replays it exactly once — also after
// a replaying watcher was killed -9 between its commit and the removal of the file. Every test ends
// with the ledger's invariants.

import { Database } from "bun:sqlite";
import { expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { describeSqliteOnly } from "../helpers/backends.ts";
import { LI_BINARY, li, liEnv } from "../helpers/cli.ts";
import { ledgerRows, type LedgerRows } from "../helpers/ledger-rows.ts";
import { until } from "../helpers/until.ts";
import { RECORD, recorded } from "../notify/helpers.ts";
import { agentHome, type AgentHome } from "../legs/agent-harness.ts";
import { handlerHost } from "../../src/notify/host.ts";
import { expectInvariants, legRecorded, reapWrongly, waitsFor } from "../legs/late-fixtures.ts";

/** Short, so a held lock turns into "unreachable" in a fraction of a second (withBusyRetry tries 8 times). */
const BUSY = { LI_SQLITE_BUSY_TIMEOUT_MS: "50" };

/** li in the background with its stderr readable while it runs. */
function start(args: string[], home: AgentHome, env: Record<string, string> = {}) {
  const proc = Bun.spawn([LI_BINARY, ...args], { env: liEnv(home.home, { ...BUSY, ...env }), stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  let stderr = "";
  const decoder = new TextDecoder();
  const reading = (async () => {
    for await (const chunk of proc.stderr) stderr += decoder.decode(chunk, { stream: true });
  })();
  const out = Promise.all([new Response(proc.stdout).text(), proc.exited, reading]).then(([stdout, code]) => ({ stdout, stderr, code }));
  return { proc, out, stderr: () => stderr };
}

/** Another process's write lock, from a connection of our own: BEGIN IMMEDIATE until released. */
function holdWriteLock(dbPath: string): { release(): void } {
  const db = new Database(dbPath);
  db.run("PRAGMA busy_timeout = 5000");
  db.run("BEGIN IMMEDIATE");
  return {
    release() {
      db.run("COMMIT");
      db.close();
    },
  };
}

const spoolDir = (home: AgentHome) => path.join(home.home, "spool");
const spoolFiles = (home: AgentHome) => (fs.existsSync(spoolDir(home)) ? fs.readdirSync(spoolDir(home)).sort() : []);
const terminalTransitions = (db: LedgerRows, id: string) =>
  db.all<{ status: string; actor: string; metadata: string | null; created_at: number }>("SELECT status, actor, metadata, created_at FROM status_transitions WHERE entity_id = ? AND terminal_event = 1 ORDER BY seq", id);

/** A leg whose final write meets a held lock and gives up at once (--ledger-retry 0): its outcome is spooled. */
async function spoolOneOutcome(home: AgentHome, db: LedgerRows, extra: string[] = []): Promise<{ id: string; notices: string }> {
  const go = path.join(home.scratch, `go-${crypto.randomUUID()}`);
  const notices = path.join(home.scratch, "notices");
  const leg = start(["agent", "--ledger-retry", "0", "--notify", `${RECORD} ${notices}`, ...extra, "--", ...waitsFor(go)], home);
  const { session_id: id } = await legRecorded(db);
  const lock = holdWriteLock(path.join(home.home, "state.db"));
  try {
    fs.writeFileSync(go, "");
    const r = await leg.out;
    expect(r.code).toBe(0);
    expect(r.stderr.trimEnd().split("\n").at(-1)).toMatch(/^li: the outcome is spooled in \S+\.json \(ledger .*SQLITE_BUSY.*\); li watch, or any li command that writes, records it once the ledger is back; it was completed \(run\.completed\.ok\)/);
  } finally {
    lock.release();
  }
  return { id, notices };
}

describeSqliteOnly("write-lock-held")("the write lock held past the busy timeout at a leg's final write (§17)", () => {
  test("released while li retries: the outcome lands, one terminal transition, nothing spooled, the notice fires once", async () => {
    const home = agentHome();
    const db = ledgerRows(home.home);
    const go = path.join(home.scratch, "go");
    const notices = path.join(home.scratch, "notices");
    const leg = start(["agent", "--ledger-retry", "60s", "--notify", `${RECORD} ${notices}`, "--", ...waitsFor(go, 0)], home);
    const { session_id: id } = await legRecorded(db);
    const lock = holdWriteLock(path.join(home.home, "state.db"));
    fs.writeFileSync(go, "");
    await until("li to say it retries", () => leg.stderr().includes("retrying the final write for up to 1m00s"));
    lock.release();

    const r = await leg.out;
    expect(r.code).toBe(0);
    expect(r.stderr.match(/retrying the final write/g)).toHaveLength(1);
    expect(r.stderr.trimEnd().split("\n").at(-1)).toMatch(/^li: completed \(run\.completed\.ok\) session /);
    expect(await db.all("SELECT status, exit_code FROM sessions")).toEqual([{ status: "completed", exit_code: 0 }]);
    expect((await terminalTransitions(db, id)).map((t) => t.actor)).toEqual(["li agent"]);
    expect(spoolFiles(home)).toEqual([]);
    expect(recorded(notices)).toHaveLength(1);
    await expectInvariants(db);
  });

  test("held past --ledger-retry: spooled (dir 0700, entry 0600), li exits by the outcome; li watch --once replays it once with the leg's times, and li wait started meanwhile returns the real outcome", async () => {
    const home = agentHome();
    const db = ledgerRows(home.home);
    const { id, notices } = await spoolOneOutcome(home, db);
    const [file] = spoolFiles(home);
    expect(file).toMatch(/^\d{8}T\d{6}\.\d{3}Z-[0-9a-f]{8}\.json$/);
    expect(fs.statSync(spoolDir(home)).mode & 0o777).toBe(0o700);
    expect(fs.statSync(path.join(spoolDir(home), file!)).mode & 0o777).toBe(0o600);
    const entry = JSON.parse(fs.readFileSync(path.join(spoolDir(home), file!), "utf8"));
    expect(entry).toMatchObject({ schema: "li.spool", version: 1, session_id: id, setup: null, final: { status: "completed", reasonCode: "run.completed.ok", exitCode: 0 } });
    // The ledger still says running; a waiter started now sees the real outcome once it is replayed.
    expect(await db.all("SELECT status FROM sessions")).toEqual([{ status: "running" }]);
    expect(recorded(notices)).toEqual([]);
    const waiter = Bun.spawn([LI_BINARY, "wait", id, "--timeout", "60"], { env: liEnv(home.home), stdout: "pipe", stderr: "pipe" });

    const watch = await li(["watch", "--once"], { home: home.home });

    expect(watch.code).toBe(0);
    expect(watch.stdout).toMatch(new RegExp(`replay entry=${file!.slice(0, -5)} session_id=${id} result=applied status=completed`));
    expect(await waiter.exited).toBe(0);
    expect(await new Response(waiter.stdout).text()).toMatch(new RegExp(`^${id}\\tstatus=completed\\treason=run\.completed\.ok\\t`));
    const terminal = await terminalTransitions(db, id);
    expect(terminal.map((t) => t.actor)).toEqual(["li.replay"]);
    expect(JSON.parse(terminal[0]!.metadata!)).toMatchObject({ recorded_late: true, spooled_at: entry.spooled_at });
    // The leg's own end, not the replay's time.
    expect(terminal[0]!.created_at).toBe(entry.final.endedAt);
    expect(await db.all("SELECT ended_at, exit_code FROM sessions")).toEqual([{ ended_at: entry.final.endedAt, exit_code: 0 }]);
    expect(await db.all("SELECT id, session_id FROM spool_replays")).toEqual([{ id: entry.id, session_id: id }]);
    expect(spoolFiles(home)).toEqual([]);
    expect(recorded(notices).map((l) => l.split(" ").slice(1, 4).join(" "))).toEqual([`completed session ${id}`]);
    // Nothing more to replay or deliver.
    const again = await li(["watch", "--once"], { home: home.home });
    expect(again.stdout).not.toContain("replay ");
    expect(recorded(notices)).toHaveLength(1);
    await expectInvariants(db);
  });

  test("BEGIN EXCLUSIVE held through the leg's end with the default busy timeout: --ledger-retry 1s spools within 1 s and one attempt (3 s in all), and li watch --once replays it once", async () => {
    const home = agentHome();
    const db = ledgerRows(home.home);
    const go = path.join(home.scratch, "go");
    // The default busy timeout (5 s): each attempt is cut to what is left of the 1 s, not waited for whole (or eight times).
    const leg = start(["agent", "--ledger-retry", "1s", "--", ...waitsFor(go, 0)], home, { LI_SQLITE_BUSY_TIMEOUT_MS: "" });
    const { session_id: id } = await legRecorded(db);
    const holder = new Database(path.join(home.home, "state.db"));
    holder.run("PRAGMA busy_timeout = 5000");
    holder.run("BEGIN EXCLUSIVE");
    let r: Awaited<typeof leg.out>;
    let tookMs: number;
    try {
      const endedAt = performance.now();
      fs.writeFileSync(go, "");
      r = await leg.out;
      tookMs = performance.now() - endedAt;
    } finally {
      holder.run("COMMIT");
      holder.close();
    }
    expect(r.code).toBe(0);
    expect(r.stderr.trimEnd().split("\n").at(-1)).toMatch(/^li: the outcome is spooled in \S+\.json \(ledger .*SQLITE_BUSY.*\); .* it was completed \(run\.completed\.ok\)/);
    expect(tookMs).toBeLessThanOrEqual(3000);
    expect(spoolFiles(home)).toHaveLength(1);

    const watch = await li(["watch", "--once"], { home: home.home });
    expect(watch.code).toBe(0);
    expect(watch.stdout.match(new RegExp(`replay entry=\\S+ session_id=${id} result=applied status=completed`, "g"))).toHaveLength(1);
    expect((await terminalTransitions(db, id)).map((t) => t.actor)).toEqual(["li.replay"]);
    expect(spoolFiles(home)).toEqual([]);
    await expectInvariants(db);
  });

  test("li show and li ls mark a session whose outcome waits in this host's spool, until it is replayed", async () => {
    const home = agentHome();
    const db = ledgerRows(home.home);
    const { id } = await spoolOneOutcome(home, db);
    const [file] = spoolFiles(home);

    const show = await li(["show", id], { home: home.home });
    expect(show.stdout).toContain(`  spooled:    an outcome waits in this host's spool: ${path.join(spoolDir(home), file!)} (li watch records it)`);
    expect(JSON.parse((await li(["show", id, "--json"], { home: home.home })).stdout).spooled).toEqual([path.join(spoolDir(home), file!)]);
    expect((await li(["ls"], { home: home.home })).stdout).toContain("running (spooled)");
    expect(JSON.parse((await li(["ls", "--json"], { home: home.home })).stdout).entities.map((e: { spooled: boolean }) => e.spooled)).toEqual([true]);

    expect((await li(["watch", "--once"], { home: home.home })).code).toBe(0);
    expect((await li(["show", id], { home: home.home })).stdout).not.toContain("spooled:");
    expect(JSON.parse((await li(["ls", "--json"], { home: home.home })).stdout).entities.map((e: { spooled: boolean }) => e.spooled)).toEqual([false]);
    await expectInvariants(db);
  });

  test("any li command that writes replays the spool on its way out", async () => {
    const home = agentHome();
    const db = ledgerRows(home.home);
    const { id } = await spoolOneOutcome(home, db);

    const r = await li(["state", "create", "team"], { home: home.home });

    expect(r.code).toBe(0);
    expect(r.stderr).toContain(`li: recorded 1 spooled outcome from ${spoolDir(home)}`);
    expect(await db.all("SELECT status FROM sessions WHERE id = ?", id)).toEqual([{ status: "completed" }]);
    expect(spoolFiles(home)).toEqual([]);
    await expectInvariants(db);
  });

  test("a replaying watcher killed -9 between the commit and the unlink: the next replay removes the entry without applying it twice", async () => {
    const home = agentHome();
    const db = ledgerRows(home.home);
    const { id, notices } = await spoolOneOutcome(home, db);
    const [file] = spoolFiles(home);

    // The runner's own bun (process.execPath), not whichever bun PATH finds first, or none.
    const worker = Bun.spawn([process.execPath, path.join(import.meta.dir, "workers/replay-then-die.ts"), home.home], { env: process.env, stdout: "pipe", stderr: "pipe" });
    expect(await worker.exited).not.toBe(0);
    expect(worker.signalCode).toBe("SIGKILL");
    // Committed: the ledger holds the outcome and the entry's id; the file is still there.
    expect((await terminalTransitions(db, id)).map((t) => t.actor)).toEqual(["li.replay"]);
    expect(await db.all("SELECT COUNT(*) AS n FROM spool_replays")).toEqual([{ n: 1 }]);
    expect(spoolFiles(home)).toEqual([file!]);

    const watch = await li(["watch", "--once"], { home: home.home });

    expect(watch.stdout).toMatch(/replay entry=\S+ session_id=\S+ result=already status=-/);
    expect((await terminalTransitions(db, id)).map((t) => t.actor)).toEqual(["li.replay"]);
    expect(await db.all("SELECT COUNT(*) AS n FROM status_transitions WHERE entity_id = ?", id)).toEqual([{ n: 2 }]);
    expect(spoolFiles(home)).toEqual([]);
    expect(recorded(notices)).toHaveLength(1);
    await expectInvariants(db);
  });

  test("a li watch --once refused the lock reports only what it applied: an entry another process had recorded is removed, not counted", async () => {
    const home = agentHome();
    const db = ledgerRows(home.home);
    await spoolOneOutcome(home, db);
    // Recorded by a replayer killed before its unlink: the file stays, its id is in the ledger.
    const worker = Bun.spawn([process.execPath, path.join(import.meta.dir, "workers/replay-then-die.ts"), home.home], { env: process.env, stdout: "pipe", stderr: "pipe" });
    await worker.exited;
    expect(spoolFiles(home)).toHaveLength(1);
    // Another watcher of this host holds the lock.
    const holder = Bun.spawn([process.execPath, path.join(import.meta.dir, "../helpers/workers/hold-watch-lock.ts"), home.home, handlerHost()], { env: process.env, stdout: "pipe", stderr: "inherit" });
    try {
      const reader = holder.stdout.getReader();
      expect(new TextDecoder().decode((await reader.read()).value)).toBe("held\n");
      const watch = await li(["watch", "--once"], { home: home.home });
      expect(watch.code).toBe(1);
      expect(watch.stderr).toContain("another li watch already runs for this ledger on this host");
      expect(watch.stderr).not.toContain("spooled outcome");
    } finally {
      holder.kill("SIGTERM");
      await holder.exited;
    }
    expect(spoolFiles(home)).toEqual([]);
    expect(await db.all("SELECT COUNT(*) AS n FROM spool_replays")).toEqual([{ n: 1 }]);
    await expectInvariants(db);
  });

  test("a leg wrongly reaped as a phantom whose outcome was spooled: the replay's late record replaces the inference with an audit row, and its notice fires with it", async () => {
    const home = agentHome();
    const db = ledgerRows(home.home);
    const go = path.join(home.scratch, "go");
    const notices = path.join(home.scratch, "notices");
    const leg = start(["agent", "--ledger-retry", "0", "--notify", `${RECORD} ${notices}`, "--", ...waitsFor(go)], home);
    const { session_id: id, id: legId } = await legRecorded(db);
    await reapWrongly(home.home, db, legId);
    const lock = holdWriteLock(path.join(home.home, "state.db"));
    try {
      fs.writeFileSync(go, "");
      expect((await leg.out).code).toBe(0);
    } finally {
      lock.release();
    }
    expect(spoolFiles(home)).toHaveLength(1);

    const watch = await li(["watch", "--once"], { home: home.home });

    expect(watch.stdout).toMatch(/replay entry=\S+ session_id=\S+ result=late_record status=completed/);
    expect(await db.all("SELECT status, status_reason_code FROM sessions")).toEqual([{ status: "completed", status_reason_code: "run.completed.ok" }]);
    const history = await db.all<{ status: string; actor: string; metadata: string | null }>("SELECT status, actor, metadata FROM status_transitions ORDER BY seq");
    expect(history.map((h) => [h.status, h.actor])).toEqual([
      ["running", "li agent"],
      ["failed", "li.watch.reaper"],
      ["completed", "li.late_record"],
    ]);
    expect(JSON.parse(history[2]!.metadata!)).toMatchObject({ recorded_late: true, late_record: { replaced_status: "failed", replaced_reason: "session.phantom.process_dead" } });
    const audit = await db.all<{ actor: string; justification: string }>("SELECT actor, justification FROM admin_events WHERE event_type = 'status_transition_override'");
    expect(audit).toEqual([{ actor: "li.late_record", justification: expect.stringContaining("failed (session.phantom.process_dead)") }]);
    // The reaper's verdict was not delivered yet: the leg's one notice carries its real outcome.
    expect(recorded(notices).map((l) => l.split(" ").slice(1, 4).join(" "))).toEqual([`completed session ${id}`]);
    await expectInvariants(db);
  });

  test("a spool entry li did not write (not JSON, a symlink, another leg's id inside) is set aside once with its reason, never applied", async () => {
    const home = agentHome();
    const db = ledgerRows(home.home);
    expect((await li(["agent", "--", "true"], { home: home.home })).code).toBe(0);
    const before = await db.dump();
    const dir = spoolDir(home);
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    fs.writeFileSync(path.join(dir, "20260101T000000.000Z-00000000.json"), "{not json", { mode: 0o600 });
    fs.symlinkSync("/dev/zero", path.join(dir, "20260101T000000.001Z-00000001.json"));
    fs.writeFileSync(path.join(dir, "20260101T000000.002Z-00000002.json"), JSON.stringify({ schema: "li.spool", version: 1, id: "20260101T000000.002Z-99999999" }), { mode: 0o600 });

    const watch = await li(["watch", "--once"], { home: home.home });

    expect(watch.stdout.match(/spool_refused/g)).toHaveLength(3);
    expect(watch.stdout).toContain("is not JSON");
    expect(watch.stdout).toContain("is a symbolic link");
    expect(spoolFiles(home).every((f) => f.endsWith(".rejected"))).toBe(true);
    // Nothing was applied (and a watcher that offers no labels writes no watch_hosts row of its own).
    expect(await db.dump()).toEqual(before);
    const again = await li(["watch", "--once"], { home: home.home });
    expect(again.stdout).not.toContain("spool_refused");
    await expectInvariants(db);
  });
});

describeSqliteOnly("write-lock-held")("the write lock held through a leg's setup (§17, item 4)", () => {
  test("a foreground leg waits up to --ledger-retry, runs its command, and spools the whole leg; li watch --once then records session, leg, history and notice once", async () => {
    const home = agentHome();
    const db = ledgerRows(home.home);
    expect((await li(["agent", "--", "true"], { home: home.home })).code).toBe(0);
    const notices = path.join(home.scratch, "notices");
    const lock = holdWriteLock(path.join(home.home, "state.db"));
    let r: { stdout: string; stderr: string; code: number };
    try {
      r = await start(["agent", "--ledger-retry", "300ms", "--notify", `${RECORD} ${notices}`, "--", "sh", "-c", "echo RAN; exit 3"], home).out;
    } finally {
      lock.release();
    }
    expect(r.stdout).toBe("RAN\n");
    expect(r.code).toBe(1); // the command's outcome
    const said = r.stderr.trimEnd().split("\n");
    expect(said[0]).toMatch(/^li: the ledger is unreachable \(.*SQLITE_BUSY.*\); retrying the setup for up to 300ms$/);
    expect(said[1]).toMatch(/^li: the ledger is still unreachable \(.*\); the command runs, and its whole leg is spooled for li watch to record$/);
    expect(said.at(-1)).toMatch(/^li: the outcome is spooled in \S+\.json .*; it was failed \(run\.failed\.exit_nonzero\) session (\S+) /);
    const id = /session (\S+) /.exec(said.at(-1)!)![1]!;
    // Nothing of it in the ledger yet, and no undurable notice: it fires once, from the ledger, after the replay.
    expect(await db.all("SELECT id FROM sessions WHERE id = ?", id)).toEqual([]);
    expect(recorded(notices)).toEqual([]);
    const [file] = spoolFiles(home);
    expect(JSON.parse(fs.readFileSync(path.join(spoolDir(home), file!), "utf8")).setup).toMatchObject({ branch: { session_id: id }, leg: { session_id: id }, registration: { origin: "--notify" } });

    const watch = await li(["watch", "--once"], { home: home.home });

    expect(watch.stdout).toMatch(new RegExp(`replay entry=\\S+ session_id=${id} result=applied status=failed`));
    expect(await db.all("SELECT status, status_reason_code, exit_code FROM sessions WHERE id = ?", id)).toEqual([{ status: "failed", status_reason_code: "run.failed.exit_nonzero", exit_code: 3 }]);
    expect(await db.all("SELECT previous_status, status, actor FROM status_transitions WHERE entity_id = ? ORDER BY seq", id)).toEqual([
      { previous_status: null, status: "running", actor: "li agent" },
      { previous_status: "running", status: "failed", actor: "li.replay" },
    ]);
    expect(await db.all("SELECT status, exit_code FROM legs WHERE session_id = ?", id)).toEqual([{ status: "failed", exit_code: 3 }]);
    expect(await db.all("SELECT COUNT(*) AS n FROM branches WHERE session_id = ?", id)).toEqual([{ n: 1 }]);
    expect(recorded(notices).map((l) => l.split(" ").slice(1, 4).join(" "))).toEqual([`failed session ${id}`]);
    expect((await li(["show", id], { home: home.home })).code).toBe(0);
    expect(spoolFiles(home)).toEqual([]);
    await expectInvariants(db);
  });

  test("the lock released while the leg waits: setup lands, the leg is recorded as usual, nothing spooled", async () => {
    const home = agentHome();
    const db = ledgerRows(home.home);
    expect((await li(["agent", "--", "true"], { home: home.home })).code).toBe(0);
    const lock = holdWriteLock(path.join(home.home, "state.db"));
    const leg = start(["agent", "--ledger-retry", "60s", "--", "sh", "-c", "echo RAN"], home);
    await until("li to wait for the setup", () => leg.stderr().includes("retrying the setup for up to 1m00s"));
    lock.release();
    const r = await leg.out;
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("RAN\n");
    expect(await db.all("SELECT status FROM sessions ORDER BY started_at")).toEqual([{ status: "completed" }, { status: "completed" }]);
    expect(spoolFiles(home)).toEqual([]);
    await expectInvariants(db);
  });

  test("--detach still exits 78 and runs nothing", async () => {
    const home = agentHome();
    const db = ledgerRows(home.home);
    expect((await li(["agent", "--", "true"], { home: home.home })).code).toBe(0);
    const marker = path.join(home.scratch, "ran");
    const lock = holdWriteLock(path.join(home.home, "state.db"));
    let r: { stdout: string; stderr: string; code: number };
    try {
      r = await start(["agent", "--detach", "--ledger-retry", "0", "--", "sh", "-c", `touch ${marker}`], home).out;
    } finally {
      lock.release();
    }
    expect(r.code).toBe(78);
    expect(r.stdout).toBe("");
    expect(fs.existsSync(marker)).toBe(false);
    expect(spoolFiles(home)).toEqual([]);
    expect(await db.all("SELECT COUNT(*) AS n FROM sessions")).toEqual([{ n: 1 }]);
    await expectInvariants(db);
  });
});
