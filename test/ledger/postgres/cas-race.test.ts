// The guarded write's compare-and-set on PostgreSQL (SPEC §5, §14) with real processes: two writers race
// the same 200 guarded writes, each through its own pool, the row lock (`SELECT … FOR UPDATE`) and the CAS in
// the UPDATE. Exactly one winner per round, no history row twice, and the writers provably raced. The
// worker is the SQLite twin's (test/ledger/concurrency.test.ts), pointed at this file's PostgreSQL ledger.

import { afterEach, expect, test } from "bun:test";
import { join } from "node:path";
import { SUITE_DB_URL_VARIABLE } from "../../helpers/backends.ts";
import { tempDir } from "../../helpers/ledger.ts";
import { pgTestLedger, type PgTestLedger } from "../../helpers/pg-ledger.ts";
import { describePostgres, usePostgresDatabase } from "../../helpers/postgres.ts";
import { runRace, type Interval } from "../../helpers/race.ts";
import { overlapMs } from "../../helpers/until.ts";

const WORKER = join(import.meta.dir, "../../helpers/workers/race-writer.ts");
const ROUNDS = 200;

describePostgres("compare-and-set on PostgreSQL with real processes", () => {
  const db = usePostgresDatabase();
  let t: PgTestLedger | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  test("two processes racing the same guarded write 200 rounds: exactly one winner per round", async () => {
    t = await pgTestLedger(db);
    const ids: string[] = [];
    for (let i = 0; i < ROUNDS; i++) ids.push((await t.ledger.createEntity("invocation")).id);
    const idsFile = join(t.home, "ids.txt");
    await Bun.write(idsFile, ids.join("\n"));
    const raceDir = tempDir("li-race-");
    // The worker opens its ledger through the suite's backend switch: here, this test's own schema.
    const env = { ...process.env, LI_TEST_BACKEND: "postgres", [SUITE_DB_URL_VARIABLE]: t.url };
    const racers = ["completed", "failed"].map((status) => Bun.spawn([process.execPath, WORKER, t!.home, idsFile, raceDir, status], { env, stdout: "pipe", stderr: "pipe" }));
    await runRace(raceDir, racers);
    const outputs = await Promise.all(racers.map(async (p) => JSON.parse(await new Response(p.stdout).text()) as Interval & { wins: string[] }));
    expect(await Promise.all(racers.map((p) => p.exited))).toEqual([0, 0]);
    // Held after their first round until both had entered, the writers' intervals overlap: they raced.
    expect(overlapMs(outputs)).toBeGreaterThan(0);
    const [a, b] = outputs.map((o) => o.wins) as [string[], string[]];
    expect(a.length + b.length).toBe(ROUNDS);
    expect(a.filter((id) => b.includes(id))).toEqual([]);
    // Each loser saw the winner's status, never an error: both wrote and both lost some rounds.
    expect(Math.min(a.length, b.length)).toBeGreaterThan(0);

    const [counts] = await t.raw.sql`SELECT count(*) FILTER (WHERE status = 'running')::int AS running, count(*)::int AS total FROM invocations`;
    expect(counts).toEqual({ running: 0, total: ROUNDS });
    const doubled = await t.raw.sql`SELECT entity_id FROM status_transitions WHERE previous_status = 'running' GROUP BY entity_id HAVING count(*) > 1`;
    expect([...doubled]).toEqual([]);
    // No two history rows share a seq (the creations' and the winners').
    const [seqs] = await t.raw.sql`SELECT count(*)::int AS n, count(DISTINCT seq)::int AS distinct_seqs FROM status_transitions`;
    expect(seqs).toEqual({ n: 2 * ROUNDS, distinct_seqs: 2 * ROUNDS });
    expect(await t.rows().historyProblems()).toEqual([]);
  }, 120_000);
});
