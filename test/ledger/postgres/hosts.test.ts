// Many hosts on one PostgreSQL ledger (SPEC §12.1, §12.2, §14), one machine playing hosts A and B through
// LI_HOST_ID: a host whose clock is 10 minutes off neither protects nor loses its legs (every time li
// compares is the server's), and `li kill` from B stops a leg on A through LISTEN. Each test has its own schema.

import { expect, test } from "bun:test";
import { join } from "node:path";
import { li, type LiResult } from "../../helpers/cli.ts";
import { fixture } from "../../helpers/fixtures.ts";
import { tempDir } from "../../helpers/ledger.ts";
import { asSuperuser, describePostgres, usePostgresDatabase } from "../../helpers/postgres.ts";
import { isAlive, killedAfterEachTest, pidFromFile, signalPid, until, untilGone, validPid } from "../../helpers/until.ts";
import { RECORD, recorded } from "../../notify/helpers.ts";

const HOST_A = { LI_HOST_ID: "pg-host-a", LI_HOST_NAME: "alpha" };
const HOST_B = { LI_HOST_ID: "pg-host-b", LI_HOST_NAME: "beta" };
const TEN_MINUTES = 600;

/** Processes a test left running (a stopped supervisor, its command): killed whatever the outcome. */
const leftRunning = killedAfterEachTest();

describePostgres("many hosts on one PostgreSQL ledger (§12.1, §12.2, §14)", () => {
  const db = usePostgresDatabase();
  let schemas = 0;

  function world() {
    const home = tempDir("li-pg-hosts-");
    const schema = `hosts_${process.pid}_${++schemas}`;
    const ledger = { LI_DB: db.url, LI_PG_SCHEMA: schema };
    const rows = (query: string, ...params: unknown[]) =>
      asSuperuser(async (sql) => [...(await sql.unsafe(query.replaceAll("li.", `"${schema}".`), params as never[]))] as Record<string, unknown>[], db.name);
    const on = (host: Record<string, string>, extra: Record<string, string> = {}) => (args: string[]): Promise<LiResult> => li(args, { home, env: { ...ledger, ...host, ...extra } });
    const session = async (id: string) => (await rows("SELECT status, status_reason_code, status_evidence_refs FROM li.sessions WHERE id = $1", id))[0]!;
    const serverNow = async () => Number((await rows("SELECT extract(epoch from clock_timestamp())::float8 AS now"))[0]!.now);

    /** A detached leg running `forever` on host A, once its supervisor recorded the command's markers. */
    async function liveLegOnA(extra: Record<string, string>, notify: string[] = []) {
      const started = await on(HOST_A, extra)(["agent", "--detach", ...notify, "--", fixture("forever")]);
      expect(started.stderr).toBe("");
      expect(started.code).toBe(0);
      const id = started.stdout.trim();
      const leg = await until(`the command markers of session ${id}`, async () => {
        const [row] = await rows("SELECT pid, command_pid, started_at FROM li.legs WHERE session_id = $1", id);
        return row?.command_pid != null ? row : null;
      });
      const supervisor = validPid(Number(leg.pid), "the supervisor");
      const command = validPid(Number(leg.command_pid), "the command");
      leftRunning.push({ pid: command, group: true }, { pid: supervisor, group: false });
      return { id, supervisor, command, startedAt: Number(leg.started_at) };
    }
    return { home, rows, on, session, serverNow, liveLegOnA };
  }

  for (const skew of [TEN_MINUTES, -TEN_MINUTES]) {
    test(`a leg on a host whose clock is ${skew > 0 ? "10 minutes ahead" : "10 minutes behind"}: left alone by another host's sweeps while its heartbeat is fresh, reaped once it is stale`, async () => {
      const w = world();
      const leg = await w.liveLegOnA({ LI_TEST_CLOCK_SKEW: String(skew) });
      // Host A wrote the server's time, not its own: the 10 minutes are gone.
      expect(Math.abs(leg.startedAt - (await w.serverNow()))).toBeLessThan(TEN_MINUTES / 2);

      // Fresh: host B's sweeps leave it alone. With A's clock written as it is, 10
      // minutes behind would already be past the 10-minute grace here.
      // B's clock is off the other way: what B compares must be the server's clock too.
      const onB = w.on(HOST_B, { LI_TEST_CLOCK_SKEW: String(-skew) });
      const doctor = ["state", "doctor", "--stale-hours", "0.1"];
      // Views age it on the server's clock too: started a moment ago, not 10 minutes off.
      const [listed] = JSON.parse((await onB(["ls", "--json"])).stdout).entities;
      expect(listed).toMatchObject({ id: leg.id, host_name: "alpha" });
      expect(listed.age_seconds).toBeGreaterThanOrEqual(0);
      expect(listed.age_seconds).toBeLessThan(TEN_MINUTES / 2);
      expect((await onB([...doctor, "--dry-run"])).stdout).toBe("running=1, swept=0 → aborted, skipped_recent=0, skipped_live=1\n");
      expect((await onB(["watch", "--once"])).code).toBe(0);
      expect((await w.session(leg.id)).status).toBe("running");

      // A stops beating (frozen), and its last sign of life moves 12 minutes back: past the 10-minute grace.
      // Had A written its own clock, 10 minutes ahead would still look 2 minutes old, and alive, here.
      signalPid(leg.supervisor, "SIGSTOP", { what: "the supervisor" });
      const back = TEN_MINUTES + 120;
      await w.rows("UPDATE li.legs SET heartbeat_at = COALESCE(heartbeat_at, started_at) - $1, started_at = started_at - $1 WHERE session_id = $2", back, leg.id);
      await w.rows("UPDATE li.sessions SET updated_at = updated_at - $1 WHERE id = $2", back, leg.id);

      expect((await onB([...doctor, "--dry-run"])).stdout).toEndWith("running=1, swept=1 → aborted, skipped_recent=0, skipped_live=0\n");
      expect((await onB(["watch", "--once"])).code).toBe(0);
      const reaped = await w.session(leg.id);
      expect(reaped).toMatchObject({ status: "failed", status_reason_code: "session.phantom.process_dead" });
      expect(JSON.parse(String(reaped.status_evidence_refs))).toEqual([expect.objectContaining({ kind: "liveness", basis: "heartbeat", host_id: expect.stringMatching(/^pg-host-a:/) })]);
      // B signalled nothing of A's.
      expect(isAlive(leg.supervisor)).toBe(true);
      expect(isAlive(leg.command)).toBe(true);
    });
  }

  test("li kill from host B stops a live leg on host A through LISTEN: cancelled/manual_kill, nothing of A's signalled by B, A's --notify once on A", async () => {
    const w = world();
    const out = join(w.home, "notice.out");
    // A heartbeat an hour apart: only the LISTEN notice can bring the request to A's supervisor in time.
    const leg = await w.liveLegOnA({ LI_TEST_HEARTBEAT_SECONDS: "3600" }, ["--notify", `${RECORD} ${out} {status} {reason}`]);

    const killed = await w.on(HOST_B)(["kill", leg.id, "--grace", "30s", "--json"]);
    expect(killed.stderr).toBe("");
    expect(killed.code).toBe(0);
    // B sent no signal: A's supervisor stopped its own command.
    expect(JSON.parse(killed.stdout)).toMatchObject({ session_id: leg.id, action: "terminated", status: "cancelled", reason_code: "run.cancelled.manual_kill", signals: [] });
    expect(await w.session(leg.id)).toMatchObject({ status: "cancelled", status_reason_code: "run.cancelled.manual_kill" });
    const [row] = await w.rows("SELECT kill_requested_at FROM li.legs WHERE session_id = $1", leg.id);
    expect(row!.kill_requested_at).not.toBeNull();
    await untilGone(leg.command, "the command to be gone");
    await untilGone(leg.supervisor, "the supervisor to be gone");
    // The leg pushed its own notice before it exited, on A: once, acknowledged; li kill on B ran nothing.
    expect(recorded(out)).toEqual([expect.stringContaining(`cancelled session ${leg.id} cancelled run.cancelled.manual_kill`)]);
    expect(await w.rows("SELECT d.consumer, d.state, c.host_id FROM li.terminal_deliveries d JOIN li.terminal_callbacks c ON c.consumer = d.consumer")).toEqual([
      { consumer: expect.stringMatching(/^cb:/), state: "acked", host_id: "pg-host-a" },
    ]);
  });

  for (const containment of ["cgroup", "environ"] as const) {
    test(`li kill from host B stops a descendant that escaped the leg's group on host A (${containment})`, async () => {
      const w = world();
      const pidfile = join(w.home, "escaped");
      const extra = { LI_TEST_HEARTBEAT_SECONDS: "3600", ...(containment === "environ" ? { LI_CONTAINMENT: "environ" } : {}) };
      const started = await w.on(HOST_A, extra)(["agent", "--detach", "--kill-grace", "2", "--", fixture("escape"), "setsid", pidfile]);
      expect(started.code).toBe(0);
      const id = started.stdout.trim();
      const escaped = await pidFromFile(pidfile, "the escaped sleep");
      leftRunning.push({ pid: escaped, group: false });
      const killed = await w.on(HOST_B)(["kill", id, "--grace", "30s", "--json"]);
      expect(killed.code).toBe(0);
      expect(JSON.parse(killed.stdout)).toMatchObject({ action: "terminated", status: "cancelled", signals: [] });
      // A's supervisor acted on the request: the session ended only once the escaped process was gone.
      expect(isAlive(escaped)).toBe(false);
      const [leg] = await w.rows("SELECT containment FROM li.legs WHERE session_id = $1", id);
      if (containment === "environ" || process.getuid?.() === 0) expect(leg!.containment).toBe(containment);
    });
  }

  test("li kill of a remote leg that does not stop within the grace exits 1 and leaves the request, which the leg acts on once it runs again", async () => {
    const w = world();
    const leg = await w.liveLegOnA({ LI_TEST_HEARTBEAT_SECONDS: "3600" });
    signalPid(leg.supervisor, "SIGSTOP", { what: "the supervisor" });

    const killed = await w.on(HOST_B)(["kill", leg.id, "--grace", "1s"]);
    expect(killed.code).toBe(1);
    expect(killed.stderr).toMatch(new RegExp(`^li: session ${leg.id}: the remote leg on host alpha \\(pg-host-a:[^)]+\\) did not stop yet \\(still running 1s after the kill request\\)`));
    expect((await w.session(leg.id)).status).toBe("running");

    signalPid(leg.supervisor, "SIGCONT", { what: "the supervisor" });
    const ended = await until(`session ${leg.id} to end`, async () => {
      const row = await w.session(leg.id);
      return row.status !== "running" ? row : null;
    });
    expect(ended).toMatchObject({ status: "cancelled", status_reason_code: "run.cancelled.manual_kill" });
    await untilGone(leg.command, "the command to be gone");
  });
});
