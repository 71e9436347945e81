// The owed queries on PostgreSQL reach their rows by index at scale (SPEC §9): with 50,000 sessions, 100,000
// history rows and 50,000 settled deliveries, analyzed, no plan reads a whole table and none is compiled
// by JIT — the watcher runs the owed query on every pass, a plain consumer's backlog on every `li events`.

import { afterAll, beforeAll, expect, test } from "bun:test";
import type { PgClient } from "../../../src/ledger/postgres/client.ts";
import { PG_DIALECT } from "../../../src/ledger/postgres/dialect.ts";
import { owedSessionsStatement, owedToConsumerStatement, owedToHandlersStatement, type BuiltStatement } from "../../../src/ledger/rules/owed.ts";
import { plainLiveConsumer } from "../../../src/ledger/schema-checks.ts";
import { describePostgres, usePostgresDatabase } from "../../helpers/postgres.ts";
import { pgLedgerClient } from "./store-fixtures.ts";

const N = 50_000;
/** The last 20 sessions' leg registrations are live and owed; every earlier one was delivered and retired. */
const LIVE = 20;

describePostgres("the owed queries' plans on PostgreSQL (§9)", () => {
  const db = usePostgresDatabase();
  let pg: PgClient;

  beforeAll(async () => {
    pg = await pgLedgerClient(db);
    const run = (text: string) => pg.sql.unsafe(text);
    await run(`INSERT INTO sessions (id, status, created_at, updated_at) SELECT 's' || g, 'completed', g, g FROM generate_series(1, ${N}) g`);
    // Two history rows per session: the start (not terminal) and the end (terminal).
    await run(`INSERT INTO status_transitions (id, seq, entity_type, entity_id, status, reason_code, source, created_at, terminal_event, leg_id)
      SELECT 't' || g, g, 'session', 's' || ((g + 1) / 2), CASE WHEN g % 2 = 0 THEN 'completed' ELSE 'running' END, 'x', 'agent', g, 1 - g % 2, 'l' || ((g + 1) / 2) FROM generate_series(1, ${2 * N}) g`);
    await run(`INSERT INTO terminal_callbacks (id, scope, consumer, session_id, leg_id, argv, origin, host_id, enabled, created_at, retired_at)
      SELECT 'c' || g, 'leg', 'cb:' || g, 's' || g, 'l' || g, '[]', 'x', 'h', CASE WHEN g > ${N - LIVE} THEN 1 ELSE 0 END, 0, CASE WHEN g > ${N - LIVE} THEN NULL ELSE 1 END FROM generate_series(1, ${N}) g`);
    await run(`INSERT INTO consumers (name, watermark, registered_at, retired_at) SELECT 'cb:' || g, 2 * g - 2, 0, CASE WHEN g > ${N - LIVE} THEN NULL ELSE 1 END FROM generate_series(1, ${N}) g`);
    await run(`INSERT INTO terminal_callbacks (id, scope, name, consumer, argv, origin, host_id, created_at, filter_kinds) VALUES ('h1', 'standing', 'a', 'h:a', '[]', 'x', 'h', 0, '["session"]')`);
    await run(`INSERT INTO consumers (name, watermark, registered_at) VALUES ('h:a', ${2 * N - 10}, 0), ('plain', ${2 * N - 10}, 0)`);
    await run(`INSERT INTO terminal_deliveries (transition_id, consumer, state, attempts, created_at, updated_at) SELECT 't' || (2 * g), 'cb:' || g, 'acked', 1, 0, 0 FROM generate_series(1, ${N - LIVE}) g`);
    await run("ANALYZE");
    // 250,000 rows and an ANALYZE: seconds on a loaded machine, past bun's 5 s default for a hook.
  }, 120_000);
  afterAll(async () => {
    await pg.close();
  });

  async function plan(statement: BuiltStatement): Promise<{ rows: number; plan: string }> {
    const params = statement.order.map((name) => statement.values[name]);
    const rows = (await pg.sql.unsafe(statement.sql, params)).length;
    const lines = await pg.sql.unsafe(`EXPLAIN (ANALYZE, COSTS OFF) ${statement.sql}`, params);
    return { rows, plan: lines.map((r: Record<string, string>) => r["QUERY PLAN"]).join("\n") };
  }

  const byIndexOnly = (what: string, result: { plan: string }) => {
    expect({ what, seqScans: result.plan.split("\n").filter((l) => l.includes("Seq Scan")) }).toEqual({ what, seqScans: [] });
    expect({ what, jit: result.plan.includes("JIT") }).toEqual({ what, jit: false });
  };

  test("a delivery pass over every handler of a host: what is owed, each delivery row probed by its key", async () => {
    const pass = await plan(owedToHandlersStatement(PG_DIALECT, { hostId: "h" }, 2_000_000_000, 100));
    expect(pass.rows).toBe(LIVE + 5);
    byIndexOnly("delivery pass", pass);
    byIndexOnly("push", await plan(owedToHandlersStatement(PG_DIALECT, { hostId: "h", transitionId: `t${2 * N}` }, 2_000_000_000, 256)));
    byIndexOnly("one handler", await plan(owedToHandlersStatement(PG_DIALECT, { consumer: "h:a" }, 2_000_000_000, 100)));
  });

  test("a plain consumer's backlog starts at its watermark", async () => {
    const backlog = await plan(owedToConsumerStatement(PG_DIALECT, "plain", 100));
    expect(backlog.rows).toBe(5);
    byIndexOnly("plain consumer", backlog);
  });

  test("the prune's owed check for a batch of 100 old sessions", async () => {
    const batch = Array.from({ length: 100 }, (_, i) => `s${i + 1}`);
    const owed = await plan(owedSessionsStatement(PG_DIALECT, batch, plainLiveConsumer("k.name", "k.retired_at")));
    expect(owed.rows).toBe(0);
    byIndexOnly("find_owed", owed);
  });
});
