// Benchmark: the PostgreSQL migration runner on a fresh database and an up-to-date open, and connect +
// open from a compiled binary. Floors in the same run: the same DDL applied raw in one transaction
// (what the runner adds: the advisory lock, re-reads, bookkeeping), `SELECT 1` on an open connection
// (the fast path's cost beyond one round trip), and a compiled hello-world (bench/floor.ts).
// Usage: bun bench/pg-migrate.ts [--n 10] [--runs 20]   (needs PostgreSQL's server programs, as the tests do)

import { SQL } from "bun";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { connectPg } from "../src/ledger/postgres/client.ts";
import { migratePg } from "../src/ledger/postgres/migrate.ts";
import { MIGRATIONS } from "../src/ledger/postgres/migrations.gen.ts";
import { resolvePgTarget } from "../src/ledger/postgres/options.ts";
import { benchDatabase } from "./pg-database.ts";
import { compileFloor, quantile, r2 } from "./floor.ts";

const { values } = parseArgs({ options: { n: { type: "string", default: "10" }, runs: { type: "string", default: "20" } } });
const N = Number(values.n);
const RUNS = Number(values.runs);
const median = (xs: number[]) => quantile(xs, 0.5);

const db = await benchDatabase("bench_migrate");
const url = db.url;
const dir = mkdtempSync(join(tmpdir(), "li-bench-pg-"));

try {
  const fresh: number[] = [];
  const raw: number[] = [];
  const upToDate: number[] = [];
  const selectOne: number[] = [];
  for (let i = 0; i < N; i++) {
    const client = await connectPg(resolvePgTarget(`${url}&search_path=fresh_${i}`, {}));
    let t0 = performance.now();
    await migratePg(client);
    fresh.push(performance.now() - t0);
    t0 = performance.now();
    await migratePg(client);
    upToDate.push(performance.now() - t0);
    t0 = performance.now();
    await client.sql`SELECT 1`;
    selectOne.push(performance.now() - t0);
    await client.close();

    const floor = new SQL({ url: `${url}`, max: 1 });
    t0 = performance.now();
    await floor.begin(async (tx) => {
      await tx.unsafe(`CREATE SCHEMA raw_${i}`);
      await tx.unsafe(`SET LOCAL search_path TO raw_${i}`);
      for (const m of MIGRATIONS) for (const s of m.statements) await tx.unsafe(s);
    });
    raw.push(performance.now() - t0);
    await floor.close();
  }

  // Connect + up-to-date open from a compiled binary, against a compiled hello-world.
  const entry = `
    import { connectPg } from ${JSON.stringify(join(import.meta.dir, "../src/ledger/postgres/client.ts"))};
    import { migratePg } from ${JSON.stringify(join(import.meta.dir, "../src/ledger/postgres/migrate.ts"))};
    import { resolvePgTarget } from ${JSON.stringify(join(import.meta.dir, "../src/ledger/postgres/options.ts"))};
    const t0 = performance.now();
    const client = await connectPg(resolvePgTarget(process.env.LI_DB));
    const t1 = performance.now();
    await migratePg(client);
    const t2 = performance.now();
    await client.close();
    console.log(JSON.stringify({ connect: t1 - t0, open: t2 - t1 }));
  `;
  const opener = compileFloor(dir, "pg-open", entry);
  const hello = compileFloor(dir, "hello", `console.log("hello");`);
  const env = { ...(process.env as Record<string, string>), LI_DB: `${url}&search_path=fresh_0` };
  const binary: number[] = [];
  const helloMs: number[] = [];
  const connectMs: number[] = [];
  const spawnTimed = (argv: string[]) => {
    const t0 = performance.now();
    const r = Bun.spawnSync(argv, { env, stdout: "pipe", stderr: "inherit" });
    if (r.exitCode !== 0) throw new Error(`${argv[0]} exited ${r.exitCode}`);
    return { ms: performance.now() - t0, out: r.stdout.toString() };
  };
  for (let i = 0; i < 3; i++) spawnTimed([opener]);
  for (let i = 0; i < RUNS; i++) {
    helloMs.push(spawnTimed([hello]).ms);
    const run = spawnTimed([opener]);
    binary.push(run.ms);
    connectMs.push((JSON.parse(run.out) as { connect: number }).connect);
  }

  const rows = [
    ["migrate a fresh schema (runner)", fresh],
    ["the same DDL raw, one transaction (floor)", raw],
    ["open an up-to-date schema (runner fast path)", upToDate],
    ["SELECT 1 on the open connection (floor)", selectOne],
    ["compiled binary: connect (in process)", connectMs],
    ["compiled binary: spawn → connect + open → exit", binary],
    ["compiled hello-world spawn → exit (floor)", helloMs],
  ] as const;
  console.log(`PostgreSQL ${db.cluster.binDir}, ${MIGRATIONS.length} migration(s), n=${N} schemas, ${RUNS} binary runs`);
  for (const [name, xs] of rows) console.log(`${name.padEnd(50)} p50 ${median([...xs]).toFixed(2)} ms  p95 ${quantile(xs, 0.95).toFixed(2)} ms`);
  console.log(
    JSON.stringify({
      fresh_ms: r2(median(fresh)),
      raw_ddl_ms: r2(median(raw)),
      fresh_vs_raw: r2(median(fresh) / median(raw)),
      up_to_date_ms: r2(median(upToDate)),
      select1_ms: r2(median(selectOne)),
      up_to_date_vs_select1: r2(median(upToDate) / median(selectOne)),
      binary_connect_ms: r2(median(connectMs)),
      binary_open_ms: r2(median(binary)),
      hello_ms: r2(median(helloMs)),
      binary_vs_hello: r2(median(binary) / median(helloMs)),
    }),
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
  await db.dispose();
}
