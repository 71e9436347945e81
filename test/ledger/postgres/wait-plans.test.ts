// li wait's cold read (waitStateStatement) on PostgreSQL reaches the session behind its target by index at
// scale: ids are COLLATE "C" (migration 0004) and the columns that refer to them are not, so a comparison
// of the two is made in "C" and cannot use the reference column's index. With 20,000 of each kind,
// analyzed, a wait on an invocation (its newest session, by sessions_invocation_idx), a play, a session
// and a retried schedule run (its chain, by schedule_runs_chain_idx) reads no table whole.

import { afterAll, beforeAll, expect, test } from "bun:test";
import type { PgClient } from "../../../src/ledger/postgres/client.ts";
import { PG_VIEWS } from "../../../src/ledger/postgres/dialect.ts";
import { waitStateStatement } from "../../../src/ledger/rules/views.ts";
import type { EntityKind } from "../../../src/lifecycle/policy.ts";
import { describePostgres, usePostgresDatabase } from "../../helpers/postgres.ts";
import { pgLedgerClient } from "./store-fixtures.ts";

const N = 20_000;

describePostgres("li wait's read on PostgreSQL (§11)", () => {
  const db = usePostgresDatabase();
  let pg: PgClient;

  beforeAll(async () => {
    pg = await pgLedgerClient(db);
    const run = (text: string) => pg.sql.unsafe(text);
    const series = `FROM generate_series(1, ${N}) g`;
    await run(`INSERT INTO invocations (id, status, created_at, updated_at) SELECT 'i' || g, 'completed', g, g ${series}`);
    await run(`INSERT INTO sessions (id, status, created_at, updated_at, invocation_id, current_leg_id) SELECT 's' || g, 'completed', g, g, 'i' || g, 'l' || g ${series}`);
    await run(`INSERT INTO legs (id, session_id, seq, run_id, state_root, artifact_root, command, host_id, started_at, status)
      SELECT 'l' || g, 's' || g, 1, 'r' || g, '/runs/' || g, '/art/' || g, '[]', 'h:b', g, 'completed' ${series}`);
    await run(`INSERT INTO plays (id, status, created_at, updated_at, session_id) SELECT 'p' || g, 'merged', g, g, 's' || g ${series}`);
    // Schedule runs in chains of two: run 2k retries run 2k-1 (its chain_parent_id).
    await run(`INSERT INTO schedule_runs (id, status, created_at, updated_at, invocation_id, chain_parent_id, chain_depth)
      SELECT 'q' || g, 'completed', g, g, 'i' || g, CASE WHEN g % 2 = 0 THEN 'q' || (g - 1) END, CASE WHEN g % 2 = 0 THEN 1 ELSE 0 END ${series}`);
    await run("ANALYZE");
  }, 120_000);
  afterAll(async () => {
    await pg.close();
  });

  test("a wait on a session, a play, an invocation and a retried schedule run: each row reached by index, no Seq Scan", async () => {
    for (const [kind, id, status] of [["session", "s77", "completed"], ["play", "p77", "merged"], ["invocation", "i77", "completed"], ["schedule_run", "q77", "completed"]] as const) {
      const statement = waitStateStatement(PG_VIEWS, kind as EntityKind, id);
      const rows = await pg.sql.unsafe(statement.sql, statement.params as never[]);
      expect({ kind, status: rows[0]?.status, artifact: rows[0]?.artifact_dir }).toEqual({ kind, status, artifact: kind === "schedule_run" ? "/art/78" : "/art/77" });
      const plan = (await pg.sql.unsafe(`EXPLAIN (ANALYZE, COSTS OFF) ${statement.sql}`, statement.params as never[])).map((r: Record<string, string>) => r["QUERY PLAN"]);
      expect({ kind, seqScans: plan.filter((l: string) => l.includes("Seq Scan")) }).toEqual({ kind, seqScans: [] });
    }
  });
});
