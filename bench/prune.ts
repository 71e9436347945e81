// Benchmark: `li state prune` over 100,000 terminal sessions with 1,000,000 history rows: total time,
// per-batch lock time, and the stalls a concurrent writer process sees, against the floor of the same writer's
// writes while no prune runs (measured just before it, in the same run).
// Usage: bun bench/prune.ts [--sessions 100000] [--per-session 10] [--batch N (default: the prune's own)]

import { Database } from "bun:sqlite";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openLedger } from "../src/ledger/open.ts";
import { resolvePaths } from "../src/ledger/location.ts";
import { prune } from "../src/sweeps/prune.ts";
import { quantile, r2 } from "./floor.ts";

function flag(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? Number(process.argv[at + 1]) : fallback;
}
const SESSIONS = flag("sessions", 100_000);
const PER_SESSION = flag("per-session", 10);
const BATCH = flag("batch", prune.defaults.batchSize);

const root = mkdtempSync(join(tmpdir(), "li-bench-prune-"));
const paths = resolvePaths({ env: { LI_HOME: join(root, "home") } });
const ledger = openLedger(paths, { create: true });
const dbPath = ledger.location;
const now = Date.now() / 1000;
const old = now - 90 * 86400;

/** Seeds terminal sessions, each with a leg, a branch, a message and PER_SESSION history rows. */
function seed(): void {
  const db = new Database(dbPath);
  db.run("PRAGMA busy_timeout = 5000");
  db.run("BEGIN");
  const session = db.prepare("INSERT INTO sessions (id, status, status_reason_code, created_at, updated_at, started_at, ended_at, current_leg_id) VALUES (?, 'completed', 'run.completed.ok', ?, ?, ?, ?, ?)");
  const leg = db.prepare("INSERT INTO legs (id, session_id, seq, run_id, state_root, artifact_root, command, started_at, ended_at, status) VALUES (?, ?, 1, ?, ?, ?, '[\"true\"]', ?, ?, 'completed')");
  const branch = db.prepare("INSERT INTO branches (id, session_id, created_at, updated_at) VALUES (?, ?, ?, ?)");
  const message = db.prepare("INSERT INTO messages (id, session_id, role, content, created_at) VALUES (?, ?, 'assistant', 'done', ?)");
  const history = db.prepare(
    "INSERT INTO status_transitions (id, seq, entity_type, entity_id, previous_status, status, reason_code, source, created_at, terminal_event) VALUES (?, ?, 'session', ?, ?, ?, ?, 'executor', ?, ?)",
  );
  let seq = 0;
  for (let i = 0; i < SESSIONS; i++) {
    const id = crypto.randomUUID();
    const legId = `leg-${i}`;
    session.run(id, old, old, old, old, legId);
    leg.run(legId, id, `run-${i}`, `/nonexistent/runs/run-${i}`, `/nonexistent/runs/run-${i}/artifacts`, old, old);
    branch.run(`b-${i}`, id, old, old);
    message.run(`m-${i}`, id, old);
    // running, then (running → completed, completed → running) pairs, ending completed.
    history.run(crypto.randomUUID(), ++seq, id, null, "running", "run.started.ok", old, 0);
    for (let k = 1; k < PER_SESSION; k++) {
      const toCompleted = k % 2 === 1;
      history.run(crypto.randomUUID(), ++seq, id, toCompleted ? "running" : "completed", toCompleted ? "completed" : "running", toCompleted ? "run.completed.ok" : "session.reopened.by_resume", old, toCompleted ? 1 : 0);
    }
  }
  db.run("COMMIT");
  db.close();
}

const t0 = performance.now();
seed();
const seedMs = performance.now() - t0;

const writer = Bun.spawn([process.execPath, join(import.meta.dir, "workers/prune-writer.ts"), dbPath], { stdin: "pipe", stdout: "pipe", stderr: "inherit" });
const reader = writer.stdout.getReader();
await reader.read(); // "ready"
await Bun.sleep(500); // the writer's floor: its writes while nothing else writes

const batchMs: number[] = [];
const statementMs = new Map<string, number>();
let batchStart = 0;
let last = 0;
// Time the candidate reads (outside the batch transactions) separately.
let listMs = 0;
const list = ledger.backend.listPruneCandidates.bind(ledger.backend);
ledger.backend.listPruneCandidates = async (o) => {
  const t = performance.now();
  const r = await list(o);
  listMs += performance.now() - t;
  return r;
};
const wallMs = () => performance.timeOrigin + performance.now();
const pruneStartWall = wallMs();
const p0 = performance.now();
const summary = await prune.runOnce(ledger, now, prune.validate({ keepDays: 30, batchSize: BATCH }), {
  hooks: {
    beforeBatch: () => void (batchStart = last = performance.now()),
    afterStatement: (statement) => {
      const t = performance.now();
      statementMs.set(statement, (statementMs.get(statement) ?? 0) + (t - last));
      last = t;
      if (statement === "record_admin_event") batchMs.push(performance.now() - batchStart);
    },
  },
});
const p1 = performance.now();
const pruneEndWall = wallMs();
const pruneMs = p1 - p0;
await Bun.sleep(200);
writer.stdin.write("stop\n");
writer.stdin.end();
let out = "";
for (;;) {
  const { value, done } = await reader.read();
  if (done) break;
  out += new TextDecoder().decode(value);
}
await writer.exited;
const samples = JSON.parse(out.trim().split("\n").at(-1)!) as Array<[number, number]>;
const idle = samples.filter(([at]) => at < pruneStartWall).map(([, ms]) => ms);
const during = samples.filter(([at]) => at >= pruneStartWall && at <= pruneEndWall).map(([, ms]) => ms);
const figures = {
  batch_p50_ms: quantile(batchMs, 0.5),
  batch_p95_ms: quantile(batchMs, 0.95),
  batch_max_ms: Math.max(...batchMs),
  writer_p50_ms: quantile(during, 0.5),
  writer_p99_ms: quantile(during, 0.99),
  writer_max_ms: Math.max(...during),
  floor_p50_ms: quantile(idle, 0.5),
  floor_p99_ms: quantile(idle, 0.99),
};

console.log(`seeded ${SESSIONS} sessions, ${SESSIONS * PER_SESSION} history rows in ${(seedMs / 1000).toFixed(1)} s`);
console.log(`prune: ${summary.sessions} sessions, ${summary.transitions} transitions, ${summary.legs} legs in ${(pruneMs / 1000).toFixed(2)} s (${summary.batches} batches of ${BATCH})`);
console.log(`batch transaction (BEGIN → last statement): p50 ${figures.batch_p50_ms.toFixed(1)} ms, p95 ${figures.batch_p95_ms.toFixed(1)} ms, max ${figures.batch_max_ms.toFixed(1)} ms`);
console.log(`concurrent writer during the prune: ${during.length} writes; p50 ${figures.writer_p50_ms.toFixed(2)} ms, p99 ${figures.writer_p99_ms.toFixed(1)} ms, longest stall ${figures.writer_max_ms.toFixed(1)} ms`);
console.log(`floor, the same writer with no prune running: ${idle.length} writes; p50 ${figures.floor_p50_ms.toFixed(2)} ms, p99 ${figures.floor_p99_ms.toFixed(1)} ms`);
console.log(`candidate reads (outside the lock): ${(listMs / 1000).toFixed(2)} s in all`);
console.log(`time per statement, summed over batches: ${[...statementMs].map(([k, v]) => `${k} ${(v / 1000).toFixed(2)} s`).join(", ")}`);
ledger.close();
console.log(
  JSON.stringify({
    bench: "prune",
    sessions: SESSIONS,
    per_session: PER_SESSION,
    batch_size: BATCH,
    pruned_sessions: summary.sessions,
    prune_s: r2(pruneMs / 1000),
    ...Object.fromEntries(Object.entries(figures).map(([k, v]) => [k, r2(v)])),
    writer_p50_ratio: r2(figures.writer_p50_ms / figures.floor_p50_ms),
    writer_p99_ratio: r2(figures.writer_p99_ms / figures.floor_p99_ms),
  }),
);
