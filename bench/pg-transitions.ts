// Benchmark `pg-transitions` (issue 11): guarded transitions per second through li's PgBackend
// (Ledger.updateStatus on a postgres:// ledger) against raw Bun SQL running the same statements on the
// same server — BEGIN, SELECT … FOR UPDATE, the CAS UPDATE, the seq advisory lock, the history INSERT
// with its seq, COMMIT — with 1 and with 4 transactions in flight, alternating rounds, best of each.
// Target: li ≥ 0.7× the raw floor at both depths. PostgreSQL on loopback: the test helper's throwaway
// cluster (fsync off), so the figures are the client's and the protocol's cost, not the disk's.
// Usage: bun bench/pg-transitions.ts [N=2000] [ROUNDS=3]   (needs PostgreSQL's server programs, as the tests do)

import { SQL } from "bun";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { resolvePaths } from "../src/ledger/location.ts";
import { openLedger } from "../src/ledger/open.ts";
import { benchDatabase } from "./pg-database.ts";
import { nextSeqStatement } from "../src/ledger/rules/seq.ts";

const N = Number(process.argv[2] ?? 2000);
const ROUNDS = Number(process.argv[3] ?? 3);
const DEPTHS = [1, 4] as const;
const db = await benchDatabase("bench_pg_transitions");
const home = mkdtempSync(join(tmpdir(), "li-bench-pg-transitions-"));
let schemas = 0;

/** A fresh li schema (migrated by li itself) with `n` running invocations; returns its URL and their ids. */
async function seeded(n: number): Promise<{ url: string; schema: string; ids: string[] }> {
  const schema = `b${++schemas}`;
  const url = `${db.url}&search_path=${schema}`;
  const ledger = openLedger(resolvePaths({ env: { LI_HOME: home, LI_DB: url } }), { create: true });
  await ledger.backend.getEntity("invocation", "none"); // migrates
  ledger.close();
  const ids = Array.from({ length: n }, (_, i) => `inv-${i}`);
  const sql = new SQL({ url: db.url, max: 1 });
  const now = Date.now() / 1000;
  await sql.begin(async (tx) => {
    await tx.unsafe(`SET LOCAL search_path TO ${schema}`);
    for (let i = 0; i < n; i += 500) {
      const chunk = ids.slice(i, i + 500);
      await tx.unsafe(
        `INSERT INTO invocations (id, status, status_reason_code, created_at, updated_at) SELECT unnest($1::text[]), 'running', 'run.started.ok', $2, $2`,
        [chunk, now],
      );
      await tx.unsafe(
        `INSERT INTO status_transitions (id, seq, entity_type, entity_id, previous_status, status, reason_code, source, created_at, terminal_event)
         SELECT gen_random_uuid()::text, $3 + ordinality, 'invocation', id, NULL, 'running', 'run.started.ok', 'executor', $2, 0 FROM unnest($1::text[]) WITH ORDINALITY AS u(id, ordinality)`,
        [chunk, now, i],
      );
    }
  });
  await sql.close();
  return { url, schema, ids };
}

/** Runs `one(id)` over `ids` with `depth` in flight; returns writes per second. */
async function drive(ids: string[], depth: number, one: (id: string) => Promise<unknown>): Promise<number> {
  let next = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: depth }, async () => {
      while (next < ids.length) await one(ids[next++]!);
    }),
  );
  return ids.length / ((performance.now() - start) / 1000);
}

async function measureLi(depth: number): Promise<number> {
  const { url, ids } = await seeded(N);
  // The floor's pool size (a leg's default is 2).
  const ledger = openLedger(resolvePaths({ env: { LI_HOME: home, LI_DB: url } }), { create: false, connections: 4 });
  await ledger.backend.getEntity("invocation", ids[0]!); // connected before the clock starts
  const rate = await drive(ids, depth, (id) => ledger.updateStatus("invocation", id, { newStatus: "completed", reasonCode: "run.completed.ok", expectedStatuses: ["running"] }));
  ledger.close();
  return rate;
}

/** The floor: the statements PgBackend runs for one guarded write, on a raw Bun SQL pool of the same size. */
async function measureRaw(depth: number): Promise<number> {
  const { schema, ids } = await seeded(N);
  const sql = new SQL({ url: db.url, max: 4, connection: { search_path: schema } });
  await sql`SELECT 1`;
  const rate = await drive(ids, depth, (id) =>
    sql.begin(async (tx) => {
      const [row] = await tx.unsafe("SELECT status, updated_at FROM invocations WHERE id = $1 FOR UPDATE", [id]);
      const now = Date.now() / 1000;
      await tx.unsafe(
        'UPDATE invocations SET "status" = $1, "status_reason_code" = $2, "status_reason_summary" = $3, "status_evidence_refs" = $4, "updated_at" = $5 WHERE id = $6 AND status IS NOT DISTINCT FROM $7',
        ["completed", "run.completed.ok", null, null, now, id, row.status],
      );
      await tx.unsafe("SELECT pg_advisory_xact_lock($1, hashtext($2))", [0x6c69, `${schema}:seq`]);
      await tx.unsafe(
        // The seq from the high-water row, advanced in the same statement, as PgBackend assigns it.
        `WITH next AS (${nextSeqStatement("GREATEST")}) ` +
          "INSERT INTO status_transitions (id, seq, entity_type, entity_id, previous_status, status, reason_code, reason_summary, evidence_refs, source, actor, created_at, metadata, terminal_event, leg_id) " +
          "VALUES ($1, (SELECT seq FROM next), $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) RETURNING seq",
        [crypto.randomUUID(), "invocation", id, row.status, "completed", "run.completed.ok", null, null, "executor", null, now, null, 1, null],
      );
    }),
  );
  await sql.close();
  return rate;
}

const best = { li: new Map<number, number>(), raw: new Map<number, number>() };
for (let round = 0; round < ROUNDS; round++) {
  for (const depth of DEPTHS) {
    best.raw.set(depth, Math.max(best.raw.get(depth) ?? 0, await measureRaw(depth)));
    best.li.set(depth, Math.max(best.li.get(depth) ?? 0, await measureLi(depth)));
  }
}
await db.dispose();

console.log(`pg-transitions: ${N} guarded writes per run, PostgreSQL on loopback, best of ${ROUNDS} alternating rounds`);
const result: Record<string, unknown> = { bench: "pg-transitions", n: N, rounds: ROUNDS };
for (const depth of DEPTHS) {
  const raw = best.raw.get(depth)!;
  const li = best.li.get(depth)!;
  console.log(`  ${depth} in flight: raw Bun SQL floor ${raw.toFixed(0)}/s, li PgBackend ${li.toFixed(0)}/s (${(li / raw).toFixed(2)}× the floor; target ≥ 0.70×)`);
  Object.assign(result, { [`raw_${depth}_per_s`]: Math.round(raw), [`li_${depth}_per_s`]: Math.round(li), [`ratio_${depth}`]: Number((li / raw).toFixed(3)) });
}
console.log(JSON.stringify(result));
