// li ui's run list (li ls's statement) on PostgreSQL reaches its rows by index at scale: with 50,000 sessions
// each with a leg and a branch, analyzed, the first page, a status filter and a later page (keyset) read no
// table whole, and a session's leg count and first branch are probes of their indexes — the ids are
// COLLATE "C" and the columns that refer to them are not, which once made each row scan every leg.
// Host and text are found by walking the (updated_at, id) index newest first until the page is full.

import { afterAll, beforeAll, expect, test } from "bun:test";
import type { PgClient } from "../../../src/ledger/postgres/client.ts";
import { PG_VIEWS } from "../../../src/ledger/postgres/dialect.ts";
import { recentStatement } from "../../../src/ledger/rules/views.ts";
import type { RecentFilter } from "../../../src/ledger/reads.ts";
import { describePostgres, usePostgresDatabase } from "../../helpers/postgres.ts";
import { pgLedgerClient } from "./store-fixtures.ts";

const N = 50_000;

describePostgres("li ui's list on PostgreSQL (§13)", () => {
  const db = usePostgresDatabase();
  let pg: PgClient;

  beforeAll(async () => {
    pg = await pgLedgerClient(db);
    const run = (text: string) => pg.sql.unsafe(text);
    // Four busy hosts and one session (s7) on a rare one; the session row keeps its leg's host name and machine.
    const host = "CASE WHEN g = 7 THEN 'rare' ELSE 'host-' || (g % 4) END";
    await run(`INSERT INTO sessions (id, status, status_reason_code, created_at, updated_at, current_leg_id, host_name, host_machine)
      SELECT 's' || g, CASE WHEN g % 10 = 0 THEN 'failed' ELSE 'completed' END, 'run.completed.ok', g, g, 'l' || g, ${host}, ${host} FROM generate_series(1, ${N}) g`);
    await run(`INSERT INTO legs (id, session_id, seq, run_id, state_root, artifact_root, command, host_id, host_name, started_at, ended_at, status)
      SELECT 'l' || g, 's' || g, 1, 'r' || g, '/runs/' || g, '', '["make","t' || (g % 100) || '"]', ${host} || ':boot', ${host}, g, g, 'completed' FROM generate_series(1, ${N}) g`);
    await run(`INSERT INTO branches (id, session_id, created_at, updated_at) SELECT 'b' || g, 's' || g, g, g FROM generate_series(1, ${N}) g`);
    await run("ANALYZE");
  }, 120_000);
  afterAll(async () => {
    await pg.close();
  });

  async function plan(filter: Partial<RecentFilter>): Promise<{ rows: number; plan: string[] }> {
    const statement = recentStatement(PG_VIEWS, "session", { kinds: ["session"], limit: 50, ...filter });
    const rows = (await pg.sql.unsafe(statement.sql, statement.params as never[])).length;
    const lines = await pg.sql.unsafe(`EXPLAIN (ANALYZE, COSTS OFF) ${statement.sql}`, statement.params as never[]);
    return { rows, plan: lines.map((r: Record<string, string>) => r["QUERY PLAN"]) };
  }

  test("the first page, a status, a later page, a host, a text: the sessions walked by index, each row's leg, leg count and branch probed by index, no sort", async () => {
    const after = { updatedAt: N - 2000, id: `s${N - 2000}` };
    for (const [what, filter] of [["first page", {}], ["status", { status: "failed" }], ["a later page", { after }], ["status, a later page", { status: "failed", after }], ["text", { text: "T7" }]] as const) {
      const result = await plan(filter);
      expect({ what, rows: result.rows }).toEqual({ what, rows: 50 });
      expect({ what, seqScans: result.plan.filter((l) => l.includes("Seq Scan")) }).toEqual({ what, seqScans: [] });
      expect({ what, sorts: result.plan.filter((l) => /^\s*(->\s*)?Sort\b/.test(l)) }).toEqual({ what, sorts: [] });
    }
    // A host: the session row's host name and machine, each index walked newest first to the LIMIT (the
    // two pages merged: the only sort, over at most two pages); a rare host is a seek, not a read of every
    // session's leg (the old code walked sessions_updated_idx through all 50,000 for the one row of "rare").
    for (const [what, filter, rows] of [["a busy host", { host: "host-1" }, 50], ["a rare host", { host: "rare" }, 1], ["a rare host's id", { host: "rare:boot" }, 1]] as const) {
      const result = await plan(filter);
      expect({ what, rows: result.rows }).toEqual({ what, rows });
      expect({ what, seqScans: result.plan.filter((l) => l.includes("Seq Scan")) }).toEqual({ what, seqScans: [] });
      // A busy host's rows are most rows: the planner may as well walk sessions_updated_idx to the LIMIT.
      if (what === "a busy host") continue;
      expect({ what, sessionsRead: result.plan.filter((l) => / on sessions e(_\d+)?\b/.test(l)).map((l) => l.replace(/^.*?(Index Scan( Backward)? using \w+|\w+ Scan).*$/, "$1")) }).toEqual({
        what,
        sessionsRead: ["Index Scan Backward using sessions_host_name_idx", "Index Scan Backward using sessions_host_machine_idx"],
      });
    }
    // A host with a status: the (host, status, updated_at, id) indexes, so a status few of a busy host's
    // sessions have (here failed, 1 in 10) reads those rows, not every row of the host.
    // (A busy host with a status 1 in 10 of its rows have: the planner may walk sessions_status_idx instead,
    // as cheap; either way no Seq Scan.)
    const busy = await plan({ host: "host-2", status: "failed" });
    expect({ rows: busy.rows, seqScans: busy.plan.filter((l) => l.includes("Seq Scan")) }).toEqual({ rows: 50, seqScans: [] });
    for (const [what, filter, rows] of [["a rare host, completed", { host: "rare", status: "completed" }, 1]] as const) {
      const withStatus = await plan(filter);
      expect({ what, rows: withStatus.rows }).toEqual({ what, rows });
      expect({ what, sessionsRead: withStatus.plan.filter((l) => / on sessions e(_\d+)?\b/.test(l)).map((l) => l.replace(/^.*?(Index Scan( Backward)? using \w+|\w+ Scan).*$/, "$1")) }).toEqual({
        what,
        sessionsRead: ["Index Scan Backward using sessions_host_name_status_idx", "Index Scan Backward using sessions_host_machine_status_idx"],
      });
    }
    // Host and text together: when the planner expects few rows to match both, it may read both tables
    // once and hash them (cheaper than walking the index past most rows); either way the page is right.
    expect((await plan({ host: "host-3", text: "t7", after })).rows).toBe(50);
  });
});
