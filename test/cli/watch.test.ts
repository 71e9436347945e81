// `li watch` end to end through dist/li: the lock, signals, --once, the prune default, and crash recovery with real processes.

import { afterAll, describe, expect, test } from "bun:test";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { handlerHost } from "../../src/notify/host.ts";
import { addHandler } from "../../src/notify/consumers.ts";
import { li, LI_BINARY, liEnv } from "../helpers/cli.ts";
import { fixture } from "../helpers/fixtures.ts";
import { collectLines } from "../helpers/lines.ts";
import { openHomeLedger, tempDir } from "../helpers/ledger.ts";
import { deadPid, insertSession, query } from "../helpers/sweep-fixtures.ts";
import { isAlive, NeverHappens, pidFromFile, until, untilGone } from "../helpers/until.ts";
import { RECORD, recorded } from "../notify/helpers.ts";

const spawned: Subprocess[] = [];
afterAll(() => {
  for (const p of spawned) if (p.exitCode === null && p.signalCode === null) p.kill("SIGKILL");
});

interface Watcher {
  proc: Subprocess<"ignore", "pipe", "pipe">;
  /** Every stdout line so far. */
  lines: string[];
  /** Resolves with the first line (so far or later) that contains `text`. */
  line(text: string, ms?: number): Promise<string>;
}

function startWatcher(home: string, args: string[] = []): Watcher {
  const proc = Bun.spawn([LI_BINARY, "watch", ...args], { env: liEnv(home), stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  spawned.push(proc);
  const out = collectLines(proc.stdout);
  const lines = out.lines;
  return {
    proc,
    lines,
    line(text, ms = 15_000) {
      return until(`a watcher line with ${JSON.stringify(text)}`, () => {
        const found = lines.find((l) => l.includes(text));
        if (found) return found;
        // Never-happens only once stdout has ended: the watcher's exit can be seen before its last lines
        // (its "stop" line) have been read from the pipe.
        if (out.ended()) throw new NeverHappens(`the watcher's output ended (exit ${proc.exitCode}); lines: ${lines.join(" | ")}`);
        return null;
      }, { timeoutMs: ms }).catch((error: Error) => {
        throw new Error(`${error.message}; lines: ${lines.join(" | ")}`);
      });
    },
  };
}

async function statusOf(home: string, id: string): Promise<string | undefined> {
  const ledger = ledgerIn(home);
  try {
    return (await query<{ status: string }>(ledger, "SELECT status FROM sessions WHERE id = ?", id))[0]?.status;
  } finally {
    ledger.close();
  }
}

function ledgerIn(home: string) {
  return openHomeLedger(home, { create: true });
}

describe("li watch", () => {
  test("a second watcher on the same ledger refuses with exit 1 and says why", async () => {
    const home = tempDir();
    const first = startWatcher(home);
    await first.line(" start ");

    const second = await li(["watch", "--once"], { home });

    expect(second.code).toBe(1);
    expect(second.stderr).toContain("another li watch already runs for this ledger");
    first.proc.kill("SIGTERM");
    expect(await first.proc.exited).toBe(0);
  });

  test("SIGTERM stops it cleanly with exit 0 and a stop line; the lock is free again", async () => {
    const home = tempDir();
    const w = startWatcher(home, ["--log-format", "json"]);
    await w.line('"action":"start"');

    w.proc.kill("SIGTERM");

    expect(await w.proc.exited).toBe(0);
    const stop = JSON.parse(await w.line('"action":"stop"'));
    expect(stop.ended).toBe("signal");
    expect((await li(["watch", "--once"], { home })).code).toBe(0);
  });

  test("--once runs one pass of everything and exits 0", async () => {
    const home = tempDir();
    const r = await li(["watch", "--once"], { home });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/ stop ended=once passes=1 sweeps=1 /);
  });

  test("bad flag values are usage errors naming the flag", async () => {
    const home = tempDir();
    expect(await li(["watch", "--once", "--log-format", "xml"], { home })).toMatchObject({ code: 2, stderr: expect.stringContaining("--log-format") });
    expect(await li(["watch", "--once", "--phantom-grace", "soon"], { home })).toMatchObject({ code: 2, stderr: expect.stringContaining("--phantom-grace") });
  });

  test("--phantom-grace 0 is accepted and reaps a dead supervisor whose heartbeat is only just written; negative values are refused", async () => {
    const home = tempDir();
    const ledger = ledgerIn(home);
    const dead = await deadPid();
    const now = Date.now() / 1000;
    // Heartbeat "now" (even a little ahead, as a skewed clock would write it): any positive grace would wait.
    await insertSession(ledger, { id: "fresh-dead", startedAt: now - 5, updatedAt: now, legs: [{ id: "leg-fresh", pid: dead.pid, pidStartTicks: dead.startTicks, startedAt: now - 5, heartbeatAt: now + 5 }] });
    ledger.close();
    const withGrace = await li(["watch", "--once", "--phantom-grace", "30"], { home });
    expect(withGrace.code).toBe(0);
    expect(await statusOf(home, "fresh-dead")).toBe("running");
    const r = await li(["watch", "--once", "--phantom-grace", "0", "--log-format", "json"], { home });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout.split("\n")[0]!)).toMatchObject({ action: "start", phantom_grace: 0 });
    expect(await statusOf(home, "fresh-dead")).toBe("failed");
    for (const bad of ["-1", "-0.5s"]) {
      const refused = await li(["watch", "--once", `--phantom-grace=${bad}`], { home });
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain("--phantom-grace");
    }
  });

  test("watch.phantom_grace: 0 is accepted; a negative value warns naming the key and falls back to 60", async () => {
    for (const [value, grace, warns] of [["0", 0, false], ["0s", 0, false], ["-5", 60, true]] as const) {
      const home = tempDir();
      writeFileSync(join(home, "settings.yaml"), `watch:\n  phantom_grace: ${value}\n`);
      const r = await li(["watch", "--once", "--log-format", "json"], { home, cwd: home });
      expect(r.code).toBe(0);
      expect(JSON.parse(r.stdout.split("\n")[0]!)).toMatchObject({ action: "start", phantom_grace: grace });
      expect(r.stderr.includes("watch.phantom_grace")).toBe(warns);
    }
  });

  test("the watch.* settings keys apply, a flag beats its key, and an invalid value warns and falls back", async () => {
    const home = tempDir();
    writeFileSync(join(home, "settings.yaml"), "watch:\n  sweep_interval: 2m\n  phantom_grace: 90\n  phantom_hours: soon\n  prune_keep_days: 45\n");

    const r = await li(["watch", "--once", "--phantom-grace", "5", "--log-format", "json"], { home, cwd: home });

    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout.split("\n")[0]!)).toMatchObject({ action: "start", sweep_interval: 120, phantom_grace: 5, phantom_hours: 1, prune_keep_days: 45 });
    expect(r.stderr).toContain("watch.phantom_hours");
  });

  test("without --prune-keep-days it never deletes: backdated terminal sessions survive; with it they go", async () => {
    const home = tempDir();
    const ledger = ledgerIn(home);
    const old = Date.now() / 1000 - 400 * 86400;
    for (const id of ["old-1", "old-2"]) await insertSession(ledger, { id, status: "completed", startedAt: old, updatedAt: old });
    const count = async () => (await query<{ n: number }>(ledger, "SELECT COUNT(*) AS n FROM sessions"))[0]!.n;

    expect((await li(["watch", "--once"], { home })).code).toBe(0);
    expect(await count()).toBe(2);

    const pruning = await li(["watch", "--once", "--prune-keep-days", "30"], { home });
    expect(pruning.stdout).toContain(" prune keep_days=30 sessions=2 ");
    expect(await count()).toBe(0);
    ledger.close();
  });

  test("crash recovery: after kill -9 of a leg's li, the watcher kills the orphan, reaps the session and delivers its --notify", async () => {
    const home = tempDir();
    const out = join(home, "notices");
    const pidFile = join(home, "command.pid");
    const agent = Bun.spawn([LI_BINARY, "agent", "--notify", `${RECORD} ${out}`, "--", fixture("forever"), pidFile], { env: liEnv(home), stdin: "ignore", stdout: "ignore", stderr: "pipe" });
    spawned.push(agent);
    const commandPid = await pidFromFile(pidFile, "the command's pid");
    const ledger = ledgerIn(home);
    await until("the leg's markers", async () => (await query(ledger, "SELECT 1 FROM legs WHERE command_pid IS NOT NULL")).length === 1, { timeoutMs: 15_000 });

    agent.kill("SIGKILL");
    await agent.exited;
    expect(isAlive(commandPid)).toBe(true);

    const w = startWatcher(home, ["--sweep-interval", "0.2", "--phantom-grace", "1"]);
    await until("the notice", () => recorded(out).length >= 1);
    w.proc.kill("SIGTERM");
    expect(await w.proc.exited).toBe(0);

    await untilGone(commandPid, "the orphan to die", { timeoutMs: 5_000 });
    const [session] = await query<{ id: string; status: string; status_reason_code: string }>(ledger, "SELECT id, status, status_reason_code FROM sessions");
    expect(session).toMatchObject({ status: "failed", status_reason_code: "session.phantom.process_dead" });
    expect(recorded(out).map((l) => l.split(" ").slice(1, 4).join(" "))).toEqual([`failed session ${session!.id}`]);
    expect(await w.line(" reap ")).toContain("killed_pgid=");
    ledger.close();
  }, 60_000);

  test("a session li agent held for its running --linked-session is finalized with that session's outcome once it ends", async () => {
    const home = tempDir();
    const ledger = ledgerIn(home);
    await ledger.createEntity("session", { id: "provider-session" });
    await li(["agent", "--linked-session", "provider-session", "--", fixture("exit-with"), "75"], { home });
    const held = async () => (await query<{ id: string; status: string; status_reason_code: string }>(ledger, "SELECT id, status, status_reason_code FROM sessions WHERE id != 'provider-session'"))[0]!;
    expect(await held()).toMatchObject({ status: "running", status_reason_code: "session.running.linked_pending" });

    expect((await li(["watch", "--once"], { home })).code).toBe(0);
    expect((await held()).status).toBe("running");

    await ledger.updateStatus("session", "provider-session", { newStatus: "completed", reasonCode: "run.completed.ok" });
    const r = await li(["watch", "--once"], { home });

    expect(await held()).toMatchObject({ status: "completed", status_reason_code: "run.completed.ok" });
    expect(r.stdout).toContain(`finalize_linked session_id=${(await held()).id} linked_session_id=provider-session linked_status=completed`);
    ledger.close();
  });

  test("kill -9 of the watcher in the middle of delivering 200 owed events (§20): what ended was acknowledged, the next watcher ends the dead one's handlers in its first pass, every event is delivered, and at most the delivery concurrency run twice", async () => {
    const home = tempDir();
    const out = join(home, "delivered");
    // While `holding` exists, a handler that finds more than 40 runs recorded announces its pid and waits
    // for a release of its own, which never comes: with 4 at a time, the first watcher ends 40 handlers and
    // then has exactly 4 hanging when it is killed. The next watcher's handlers find no `holding` and run free.
    const holding = join(home, "holding");
    writeFileSync(holding, "");
    const script = 'echo "$LI_EVENT_ID" >> "$0"; if [ -e "$1" ] && [ "$(wc -l < "$0")" -gt 40 ]; then echo $$ >> "$1.pids"; while [ ! -e "$1.release-$$" ]; do sleep 0.01; done; fi';
    const concurrency = 4;
    const ledger = ledgerIn(home);
    await addHandler(ledger, { name: "count", argv: ["/bin/sh", "-c", script, out, holding], kinds: [], ids: [], hostId: handlerHost() });
    const events: string[] = [];
    for (let i = 0; i < 200; i++) {
      const id = `s-${String(i).padStart(3, "0")}`;
      await ledger.createEntity("session", { id });
      const outcome = await ledger.transition("session", id, { newStatus: "completed", reasonCode: "run.completed.ok" });
      if (outcome.result === "applied") events.push(outcome.transition.transitionId);
    }
    expect(events.length).toBe(200);
    const runs = () => recorded(out);
    const hanging = () => recorded(`${holding}.pids`).map(Number);
    const deliveries = async (state: string) => (await query<{ n: number }>(ledger, "SELECT COUNT(*) AS n FROM terminal_deliveries WHERE consumer = 'handler:count' AND state = ?", state))[0]!.n;

    const first = startWatcher(home, ["--delivery-concurrency", String(concurrency)]);
    await until("the first watcher's four workers to hang", () => hanging().length === concurrency, { timeoutMs: 60_000 });
    first.proc.kill("SIGKILL");
    await first.proc.exited;
    // Each delivery was acknowledged as its handler ended: only the hanging ones are claimed.
    expect(await deliveries("acked")).toBe(runs().length - concurrency);
    expect(await deliveries("claimed")).toBe(concurrency);
    const orphans = hanging();
    expect(orphans.filter((pid) => !isAlive(pid))).toEqual([]);
    rmSync(holding);

    // Its first pass ends the dead watcher's handlers (end_orphan_handler), before any of their claims can
    // expire. (Any li watch of this user on the machine may get there first: the handlers' owner is dead.)
    const second = startWatcher(home, ["--delivery-concurrency", String(concurrency)]);
    for (const pid of orphans) await untilGone(pid, `the dead watcher's handler ${pid} to be ended`);
    // Their claims expire (budget + margin) and the second watcher runs them again; the rest it delivers at once.
    await until("every event acknowledged", async () => (await deliveries("acked")) === 200, { timeoutMs: 90_000 });
    second.proc.kill("SIGTERM");
    expect(await second.proc.exited).toBe(0);

    const seen = runs();
    expect(events.filter((e) => !seen.includes(e))).toEqual([]);
    expect(new Set(seen).size).toBe(200);
    // A duplicate is a handler run twice for one event: at most the ones running when the watcher died.
    expect(seen.length - 200).toBeLessThanOrEqual(concurrency);
    expect((await query<{ n: number }>(ledger, "SELECT COUNT(*) AS n FROM terminal_deliveries WHERE consumer = 'handler:count' AND state != 'acked'"))[0]!.n).toBe(0);
    ledger.close();
  }, 150_000);
});

