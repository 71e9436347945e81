// Wake-ups on a PostgreSQL ledger end to end through dist/li (SPEC §14, issue 11 items 5 and 6): a leg
// learns a kill request recorded on it by LISTEN, long before its next heartbeat.

import { afterEach, expect, test } from "bun:test";
import { li, type LiResult } from "../../helpers/cli.ts";
import { fixture } from "../../helpers/fixtures.ts";
import { tempDir } from "../../helpers/ledger.ts";
import { asSuperuser, describePostgres, usePostgresDatabase } from "../../helpers/postgres.ts";
import { isAlive, signalPid, until, untilGone, validPid } from "../../helpers/until.ts";

/** Processes a test left running: killed whatever the outcome. */
const leftRunning: Array<{ pid: number; group: boolean }> = [];
afterEach(() => {
  for (const { pid, group } of leftRunning.splice(0)) {
    try {
      if (isAlive(pid)) signalPid(pid, "SIGKILL", { group, what: "a process the test left running" });
    } catch {
      // Gone meanwhile (signalPid re-validates it).
    }
  }
});

describePostgres("wake-ups on PostgreSQL, through the binary (§14)", () => {
  const db = usePostgresDatabase();
  let schemas = 0;

  /** A home whose ledger is its own schema of this file's database; `sql` runs as the superuser in that schema. */
  function pgHome(env: Record<string, string> = {}) {
    const home = tempDir("li-pg-wake-");
    const schema = `wake_${process.pid}_${++schemas}`;
    const ledgerEnv = { LI_DB: db.url, LI_PG_SCHEMA: schema, ...env };
    return {
      home,
      run: (args: string[], more: Record<string, string> = {}): Promise<LiResult> => li(args, { home, env: { ...ledgerEnv, ...more } }),
      sql: <T = Record<string, unknown>>(query: string, params: unknown[] = []): Promise<T[]> =>
        asSuperuser(async (sql) => {
          await sql.unsafe(`SET search_path TO "${schema}"`);
          return [...(await sql.unsafe(query, params as never[]))] as T[];
        }, db.name),
    };
  }

  test("a kill request recorded on a leg stops it through LISTEN, with its heartbeat an hour away: cancelled/manual_kill, the command gone", async () => {
    const h = pgHome({ LI_HOST_ID: "host-a", LI_TEST_HEARTBEAT_SECONDS: "3600" });
    const started = await h.run(["agent", "--detach", "--", fixture("forever")]);
    expect(started.code).toBe(0);
    const id = started.stdout.trim();
    const leg = await until(`the command markers of session ${id}`, async () => {
      const [row] = await h.sql<{ pid: number; command_pid: number | null }>("SELECT pid, command_pid FROM legs WHERE session_id = $1", [id]);
      return row?.command_pid != null ? row : null;
    });
    const supervisor = validPid(Number(leg.pid), "the supervisor");
    const command = validPid(Number(leg.command_pid), "the command");
    leftRunning.push({ pid: command, group: true }, { pid: supervisor, group: false });
    // The supervisor subscribes once its leg is set up: wait for its LISTEN, so the notice has a listener.
    await until("the supervisor's LISTEN li_kill", async () => {
      const rows = await h.sql<{ n: number }>("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND query ILIKE 'LISTEN%li_kill%'");
      return rows[0]!.n > 0;
    });

    // What li kill on another host records (no signal reaches this supervisor).
    await h.sql("UPDATE legs SET kill_requested_at = extract(epoch from clock_timestamp()) WHERE session_id = $1", [id]);
    const ended = await until(`session ${id} to end`, async () => {
      const [row] = await h.sql<{ status: string; status_reason_code: string }>("SELECT status, status_reason_code FROM sessions WHERE id = $1", [id]);
      return row && row.status !== "running" ? row : null;
    });
    expect(ended).toEqual({ status: "cancelled", status_reason_code: "run.cancelled.manual_kill" });
    await untilGone(command, "the command to be gone");
    await untilGone(supervisor, "the supervisor to be gone");
  });
});
