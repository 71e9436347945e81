// Many hosts, one ledger (SPEC §12.1, §9.1, §14): one machine plays two hosts through LI_HOST_ID / LI_HOST_NAME.
import { describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { fixture } from "../helpers/fixtures.ts";
import { tempDir } from "../helpers/ledger.ts";
import { ledgerRows } from "../helpers/ledger-rows.ts";
import { li, LI_BINARY, liEnv } from "../helpers/cli.ts";
import { testSqliteOnly } from "../helpers/backends.ts";
import { isAlive, killedAfterEachTest, NeverHappens, signalPid, until, untilGone, validPid } from "../helpers/until.ts";
import { RECORD, recorded } from "../notify/helpers.ts";
import { detachedLeg } from "../legs/late-fixtures.ts";

const HOST_A = { LI_HOST_ID: "host-a", LI_HOST_NAME: "alpha" };
const HOST_B = { LI_HOST_ID: "host-b", LI_HOST_NAME: "beta" };
type Host = typeof HOST_A;

const on = (host: Host, home: string) => (args: string[]) => li(args, { home, env: host });

/** Processes a test left running (a stopped supervisor, its command): killed whatever the outcome. */
const leftRunning = killedAfterEachTest();

/** A detached leg on `host` running `forever`, once its supervisor recorded the command's markers. */
async function liveLeg(home: string, host: Host, options: { notify?: string; env?: Record<string, string> } = {}): Promise<{ id: string; supervisor: number; command: number }> {
  const notify = options.notify === undefined ? [] : ["--notify", options.notify];
  return detachedLeg(ledgerRows(home), liEnv(home, { ...host, ...options.env }), leftRunning, notify);
}

const sessionOf = async (home: string, id: string) =>
  (await ledgerRows(home).get<{ status: string; status_reason_code: string; status_evidence_refs: string | null }>("SELECT status, status_reason_code, status_evidence_refs FROM sessions WHERE id = ?", id))!;
const onlySession = async (home: string) => (await ledgerRows(home).get<{ id: string }>("SELECT id FROM sessions"))!.id;

describe("host identity (LI_HOST_ID, LI_HOST_NAME)", () => {
  test("a leg records the injected host; li show and li ls --json name it beside its id; li logs reads it only there", async () => {
    const home = tempDir();
    const run = await on(HOST_A, home)(["agent", "--", fixture("exit-with"), "0"]);
    expect(run.code).toBe(0);
    const id = await onlySession(home);

    // Read from the other host: views see every host's legs.
    const shown = JSON.parse((await on(HOST_B, home)(["show", id, "--json"])).stdout);
    const hostA = shown.legs[0].host_id as string;
    expect(hostA).toMatch(/^host-a:./);
    expect(shown.legs[0].host_name).toBe("alpha");
    expect(shown.host).toEqual({ id: hostA, name: "alpha" });
    const human = (await on(HOST_B, home)(["show", id])).stdout;
    expect(human).toContain(`  host:       alpha (${hostA})\n`);
    const [listed] = JSON.parse((await on(HOST_B, home)(["ls", "--json"])).stdout).entities;
    expect(listed).toMatchObject({ id, host_id: hostA, host_name: "alpha" });
    // Its output stays on its host: li logs reads it there, and names the host elsewhere.
    expect((await on(HOST_A, home)(["logs", id])).code).toBe(0);
    const elsewhere = await on(HOST_B, home)(["logs", id]);
    expect(elsewhere.code).toBe(1);
    expect(elsewhere.stderr).toContain(`alpha (${hostA})`);
  });

  test("a bad LI_HOST_ID, LI_HOST_NAME or LI_TEST_HEARTBEAT_SECONDS is one line naming the variable, exit 2, and nothing is recorded", async () => {
    const home = tempDir();
    for (const [env, variable] of [
      [{ LI_HOST_ID: "host:a" }, "LI_HOST_ID"],
      [{ LI_HOST_ID: "-flag" }, "LI_HOST_ID"],
      [{ LI_HOST_NAME: "al\u0007pha" }, "LI_HOST_NAME"],
      [{ LI_TEST_HEARTBEAT_SECONDS: "0" }, "LI_TEST_HEARTBEAT_SECONDS"],
    ] as const) {
      const r = await li(["agent", "--", fixture("exit-with"), "0"], { home, env });
      expect(r.code).toBe(2);
      expect(r.stderr).toStartWith(`li: ${variable}: `);
      expect(r.stderr.trimEnd().split("\n")).toHaveLength(1);
    }
    expect(await ledgerRows(home).exists()).toBe(false);
    expect(existsSync(join(home, "runs"))).toBe(false);
  });
});

describe("a leg of another host is judged by its heartbeat only (§12.1)", () => {
  test("left alone while fresh, reaped once stale, and its pids are never signalled from the other host", async () => {
    const home = tempDir();
    // No beat during the test: one in flight when SIGSTOP lands would hold the write lock for good, or
    // commit a fresh heartbeat over the backdated one below. Fresh is judged by its start meanwhile.
    const leg = await liveLeg(home, HOST_A, { env: { LI_TEST_HEARTBEAT_SECONDS: "86400" } });

    // Fresh: host B's watcher leaves it alone.
    expect((await on(HOST_B, home)(["watch", "--once"])).code).toBe(0);
    expect((await sessionOf(home, leg.id)).status).toBe("running");

    // Host A's supervisor stops beating (frozen, not dead: A itself still sees it alive), and its last sign
    // of life is two days old.
    signalPid(leg.supervisor, "SIGSTOP", { what: "the supervisor" });
    const old = Date.now() / 1000 - 2 * 86400;
    const rows = ledgerRows(home);
    await rows.run("UPDATE legs SET heartbeat_at = ?, started_at = ? WHERE session_id = ?", old, old, leg.id);
    await rows.run("UPDATE sessions SET updated_at = ? WHERE id = ?", old, leg.id);

    // Every sweep agrees: B sees a dead leg, A (probing its own pid) a live one; kill --all-stale leaves other hosts' legs alone.
    expect((await on(HOST_B, home)(["state", "doctor", "--dry-run"])).stdout).toEndWith("running=1, swept=1 → aborted, skipped_recent=0, skipped_live=0\n");
    expect((await on(HOST_A, home)(["state", "doctor", "--dry-run"])).stdout).toEndWith("running=1, swept=0 → aborted, skipped_recent=0, skipped_live=1\n");
    expect((await on(HOST_B, home)(["kill", "--all-stale", "--dry-run"])).stdout).toContain("killed=0 → cancelled, skipped_recent=0, skipped_live=0, skipped_remote=1");
    expect((await on(HOST_A, home)(["watch", "--once"])).code).toBe(0);
    expect((await sessionOf(home, leg.id)).status).toBe("running");

    expect((await on(HOST_B, home)(["watch", "--once"])).code).toBe(0);
    const reaped = await sessionOf(home, leg.id);
    expect(reaped).toMatchObject({ status: "failed", status_reason_code: "session.phantom.process_dead" });
    const evidence = JSON.parse(reaped.status_evidence_refs!) as Array<Record<string, unknown>>;
    expect(evidence).toEqual([
      expect.objectContaining({ kind: "liveness", state: "dead", basis: "heartbeat", host_id: expect.stringMatching(/^host-a:/), local_host_id: expect.stringMatching(/^host-b:/), supervisor: "dead", command: "unknown" }),
    ]);
    // Nothing of host A's was signalled by host B: the frozen supervisor and its command still exist.
    expect(isAlive(leg.supervisor)).toBe(true);
    expect(isAlive(leg.command)).toBe(true);
  });
});

describe("handlers run only on their host (§9.1)", () => {
  test("a watcher on host B never runs a handler registered on host A; A's watcher delivers it once", async () => {
    const home = tempDir();
    const out = join(home, "handler.out");
    expect((await on(HOST_A, home)(["events", "handlers", "add", "on-a", "--kind", "session", "--", RECORD, out, "{status}"])).code).toBe(0);
    // The leg runs on B: its own push runs B's handlers only, so A's is owed.
    expect((await on(HOST_B, home)(["agent", "--", fixture("exit-with"), "0"])).code).toBe(0);
    const id = await onlySession(home);

    expect((await on(HOST_B, home)(["watch", "--once"])).code).toBe(0);
    expect((await on(HOST_B, home)(["events", "deliver"])).code).toBe(0);
    expect(recorded(out)).toEqual([]);
    expect(await ledgerRows(home).all("SELECT * FROM terminal_deliveries")).toEqual([]);

    expect((await on(HOST_A, home)(["watch", "--once"])).code).toBe(0);
    expect(recorded(out)).toEqual([expect.stringContaining(`completed session ${id} completed`)]);
    expect((await on(HOST_A, home)(["watch", "--once"])).code).toBe(0);
    expect(recorded(out)).toHaveLength(1);
  });
});

describe("one watcher per host per ledger (§12.6)", () => {
  test("a second watcher of the same host refuses with exit 1; a watcher of another host runs beside the first", async () => {
    const home = tempDir();
    const first = Bun.spawn([LI_BINARY, "watch"], { env: liEnv(home, HOST_A), stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    leftRunning.push({ pid: first.pid, group: false });
    let seen = "";
    void (async () => {
      for await (const chunk of first.stdout) seen += new TextDecoder().decode(chunk);
    })();
    await until("host A's watcher to start", () => {
      if (first.exitCode !== null) throw new NeverHappens(`the watcher exited ${first.exitCode}: ${seen}`);
      return seen.includes(" start ");
    });
    expect(seen).toContain("host=host-a");

    const again = await on(HOST_A, home)(["watch", "--once"]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("another li watch already runs for this ledger on this host");
    const other = await on(HOST_B, home)(["watch", "--once"]);
    expect(other.stderr).toBe("");
    expect(other.code).toBe(0);

    first.kill("SIGTERM");
    expect(await first.exited).toBe(0);
  });
});

describe("li kill across hosts (§12.2)", () => {
  testSqliteOnly("remote-kill-refused")("on SQLite a leg of another host is refused with exit 1 naming its host, and nothing is recorded", async () => {
    const home = tempDir();
    const leg = await liveLeg(home, HOST_A);
    const r = await on(HOST_B, home)(["kill", leg.id]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^li: session \S+: its leg runs on host alpha \(host-a:[^)]+\); this ledger cannot reach another host's supervisor, so run li kill there\n$/);
    expect(await ledgerRows(home).get("SELECT kill_requested_at FROM legs WHERE session_id = ?", leg.id)).toEqual({ kill_requested_at: null });
    expect((await sessionOf(home, leg.id)).status).toBe("running");
    expect(isAlive(leg.command)).toBe(true);
  });

  test("a kill request recorded on the leg reaches its supervisor at its next heartbeat: cancelled/manual_kill, the command gone, its --notify once on its host", async () => {
    const home = tempDir();
    const out = join(home, "notice.out");
    const leg = await liveLeg(home, HOST_A, { notify: `${RECORD} ${out} {status} {reason}`, env: { LI_TEST_HEARTBEAT_SECONDS: "0.2" } });
    // What li kill on another host records (no signal reaches this supervisor).
    await ledgerRows(home).run("UPDATE legs SET kill_requested_at = ? WHERE session_id = ?", Date.now() / 1000, leg.id);

    const ended = await until(`session ${leg.id} to end`, async () => {
      const row = await sessionOf(home, leg.id);
      return row.status !== "running" ? row : null;
    });
    expect(ended).toMatchObject({ status: "cancelled", status_reason_code: "run.cancelled.manual_kill" });
    await untilGone(leg.command, "the command to be gone");
    await untilGone(leg.supervisor, "the supervisor to be gone");
    expect(recorded(out)).toEqual([expect.stringContaining(`cancelled session ${leg.id} cancelled run.cancelled.manual_kill`)]);
  });
});
