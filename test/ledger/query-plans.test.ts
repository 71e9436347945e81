// Every listing and lookup query uses an index whatever the limit and filters: each statement the read,
// sweep and notify seams run is recorded with its parameters, and SQLite's own EXPLAIN QUERY PLAN for
// it must show neither a full table scan nor a temporary B-tree for ORDER BY. Deterministic: plans
// depend on the schema and the bound values, not on the rows (no ANALYZE), so a small ledger shows what
// a million-row one would do.

import { Database, type Statement } from "bun:sqlite";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ENTITY_KINDS, POLICIES } from "../../src/lifecycle/policy.ts";
import { Ledger } from "../../src/ledger/ledger.ts";
import { resolveIn, VIEW_LOOKUP_ORDER, WAIT_LOOKUP_ORDER } from "../../src/ledger/resolve.ts";
import { SqliteBackend } from "../../src/ledger/sqlite/backend.ts";
import { SqliteReads } from "../../src/ledger/sqlite/reads.ts";
import { PRUNE_BATCH_STATEMENTS } from "../../src/ledger/rules/prune.ts";
import { tempLedger, type TempLedger } from "../helpers/ledger.ts";
import { insertSession } from "../helpers/sweep-fixtures.ts";
import { describeSqliteOnly, onPostgres } from "../helpers/backends.ts";
import { listEntries } from "../../src/cli/views/ls.ts";
import { submitRun } from "../../src/schedule/submit.ts";

interface Ran {
  sql: string;
  params: unknown[];
}

/** A connection that records every statement run through it (sql and bound values), then runs it. */
function recording(db: Database, log: Ran[]): Database {
  const wrap = (statement: Statement, sql: string) =>
    new Proxy(statement, {
      get(target, prop) {
        const value = Reflect.get(target, prop, target);
        if (typeof value !== "function") return value;
        if (prop === "all" || prop === "get" || prop === "run" || prop === "values" || prop === "iterate") {
          return (...params: unknown[]) => {
            log.push({ sql, params });
            return (value as (...a: unknown[]) => unknown).apply(target, params);
          };
        }
        return value.bind(target);
      },
    });
  return new Proxy(db, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (typeof value !== "function") return value;
      if (prop === "query" || prop === "prepare") return (sql: string) => wrap((value as (s: string) => Statement).call(target, sql), sql);
      if (prop === "run") {
        return (sql: string, ...params: unknown[]) => {
          log.push({ sql, params });
          return (value as (...a: unknown[]) => unknown).apply(target, [sql, ...params]);
        };
      }
      return value.bind(target);
    },
  });
}

/** What makes a plan unacceptable: a table read row by row, or a sort of the whole result for ORDER BY. */
function planProblems(detail: string[]): string[] {
  return detail.filter((line) => (/^SCAN /.test(line) && !/ USING (COVERING )?INDEX /.test(line) && !/VIRTUAL TABLE|CONSTANT ROW|^SCAN \(/.test(line)) || /TEMP B-TREE FOR .*ORDER BY/.test(line));
}

const READS_ONLY = /^\s*(SELECT|UPDATE|DELETE|WITH)\b/i;

/**
 * The only sorts allowed, each over a set the query's index already bounds (never the table), with why.
 * A scan is never excused. Each entry must still match a statement, so the list cannot outlive its query.
 */
const BOUNDED_SORTS: readonly { sql: RegExp; why: string }[] = [
  { sql: /FROM terminal_deliveries d JOIN status_transitions t/, why: "one entity's deliveries: its history by index, each transition's deliveries by key, sorted by consumer" },
  { sql: /UNION ALL/, why: "events owed: each part reaches its rows by index; the owed rows of a pass (not the table) are merged by seq" },
  { sql: /FROM legs g JOIN sessions s ON s\.id = g\.session_id\s+WHERE g\.session_id IN/, why: "the legs of one sweep batch (at most the batch's sessions), each session's by index" },
  { sql: /\) by_name UNION SELECT \* FROM/, why: "a host filter: its name's and its machine's index each walked to the page's LIMIT, the two pages (not the table) merged" },
];

let t: TempLedger;
let raw: Database;
let log: Ran[];
let ledger: Ledger;
let backend: SqliteBackend;
let reads: SqliteReads;
const T0 = 1_800_000_000;
/** label → the statements it ran: each label must run at least one (a check that ran nothing proves nothing). */
const ranBy = new Map<string, Ran[]>();

async function exercise(label: string, fn: () => unknown): Promise<void> {
  const start = log.length;
  await fn();
  ranBy.set(label, log.slice(start));
}

beforeAll(async () => {
  // The plans are SQLite's (SQLITE_ONLY "query-plans"): nothing to exercise on PostgreSQL.
  if (onPostgres) return;
  t = tempLedger({ now: () => T0 });
  // Rows of every kind, so each lookup goes all the way (a wait on a play reads its session, …).
  const inv = await t.ledger.createEntity("invocation", { id: "inv-00000001" });
  await insertSession(t.ledger, { id: "ses-00000001", startedAt: T0 - 60, updatedAt: T0 - 30, legs: [{ id: "leg-00000001", startedAt: T0 - 60, stateRoot: "/runs/r1" }] });
  await insertSession(t.ledger, { id: "ses-00000002", status: "completed", startedAt: T0 - 9000, updatedAt: T0 - 8000, legs: [{ id: "leg-00000002", startedAt: T0 - 9000, endedAt: T0 - 8000, status: "completed" }] });
  await t.ledger.createEntity("play", { id: "pla-00000001", fields: { session_id: "ses-00000001" } });
  await t.ledger.createEntity("schedule_run", { id: "sch-00000001", fields: { invocation_id: inv.id } });
  await t.ledger.createEntity("show", { id: "sho-00000001" });
  await t.ledger.createEntity("team", { id: "tea-00000001" });
  // A live handler on host "h", so the owed queries below run whole (a host with none stops at the probe).
  await t.ledger.backend.notify.insertConsumer({ name: "cb:x", watermark: 0, registered_at: T0 - 60, retired_at: null });
  await t.ledger.backend.notify.insertCallback({ id: "cb-00000001", scope: "standing", name: "x", consumer: "cb:x", session_id: null, leg_id: null, argv: '["true"]', filter_kinds: null, filter_ids: null, origin: "cli", host_id: "h", uid: 1000, enabled: 1, created_at: T0 - 60, retired_at: null });
  t.ledger.close();
  raw = new Database(t.dbPath, { strict: true });
  log = [];
  backend = new SqliteBackend(recording(new Database(t.dbPath, { strict: true }), log), t.dbPath, { now: () => T0 });
  ledger = new Ledger(backend);
  reads = backend.reads;

  // li ls: every kind alone and all together, each filter of li ls, limits 1, 2, 50 and 1000.
  for (const kinds of [ENTITY_KINDS, ...ENTITY_KINDS.map((k) => [k])]) {
    for (const limit of [1, 2, 50, 1000]) {
      const name = kinds.length === 1 ? kinds[0] : "every kind";
      await exercise(`ls ${name} --limit ${limit}`, () => reads.listRecent({ kinds, limit }));
      const status = [...POLICIES[kinds[0]!].statuses][0]!;
      await exercise(`ls ${name} --status ${status} --limit ${limit}`, () => reads.listRecent({ kinds, status, limit }));
      await exercise(`ls ${name} --since --limit ${limit}`, () => reads.listRecent({ kinds, since: T0 - 3600, limit }));
      await exercise(`ls ${name} --status ${status} --since --limit ${limit}`, () => reads.listRecent({ kinds, status, since: T0 - 3600, limit }));
    }
  }
  // li ui's list: the next page (keyset) alone and with each filter, a host, a text; every kind and sessions alone.
  const after = { updatedAt: T0 - 30, id: "ses-00000001" };
  for (const kinds of [ENTITY_KINDS, ["session"] as const]) {
    const name = kinds.length === 1 ? kinds[0] : "every kind";
    for (const limit of [1, 50, 1000]) {
      await exercise(`ui list ${name} after a row --limit ${limit}`, () => reads.listRecent({ kinds, after, limit }));
      await exercise(`ui list ${name} --status running after a row --limit ${limit}`, () => reads.listRecent({ kinds, status: "running", after, limit }));
      await exercise(`ui list ${name} --host --limit ${limit}`, () => reads.listRecent({ kinds, host: "alpha", limit }));
      await exercise(`ui list ${name} --host after a row --limit ${limit}`, () => reads.listRecent({ kinds, host: "alpha", after, limit }));
      await exercise(`ui list ${name} --host id --limit ${limit}`, () => reads.listRecent({ kinds, host: "alpha:boot-1", limit }));
      await exercise(`ui list ${name} --status --host --limit ${limit}`, () => reads.listRecent({ kinds, status: "completed", host: "alpha", limit }));
      await exercise(`ui list ${name} text --limit ${limit}`, () => reads.listRecent({ kinds, text: "make", limit }));
      await exercise(`ui list ${name} text after a row --limit ${limit}`, () => reads.listRecent({ kinds, text: "make", after, limit }));
      await exercise(`ui list ${name} --status text --host after a row --limit ${limit}`, () => reads.listRecent({ kinds, status: "failed", text: "50%_", host: "alpha", after, limit }));
    }
  }
  // li wait / li show: resolution by full id and by prefix (entities, a branch, a run), each kind's wait state.
  for (const id of ["ses-00000001", "ses-0000", "inv-00000001", "pla-0000", "run-leg-00000001", "run-leg-", "nothing-like-this"]) {
    await exercise(`resolve ${id} (wait order)`, () => resolveIn(reads, id, WAIT_LOOKUP_ORDER));
    await exercise(`resolve ${id} (view order)`, () => resolveIn(reads, id, VIEW_LOOKUP_ORDER));
  }
  const branch = raw.query<{ id: string }, []>("SELECT id FROM branches LIMIT 1").get();
  if (branch) await exercise("resolve a branch id", () => resolveIn(reads, branch.id, WAIT_LOOKUP_ORDER));
  for (const [kind, id] of [["session", "ses-00000001"], ["invocation", "inv-00000001"], ["play", "pla-00000001"], ["schedule_run", "sch-00000001"], ["show", "sho-00000001"], ["team", "tea-00000001"]] as const) {
    await exercise(`wait state of a ${kind}`, () => reads.waitState(kind, id));
    await exercise(`show ${kind}`, async () => {
      reads.entityRow(kind, id);
      reads.transitionsOf(kind, id);
      reads.adminEventsOf(kind, id);
      reads.listDeliveries(kind, id);
    });
  }
  await exercise("shortest unique prefix", () => reads.sharedPrefixLength("ses-00000001"));
  await exercise("shortest unique prefixes of a page", () => {
    const lengths = reads.sharedPrefixLengths(["ses-00000001", "ses-00000002", "inv-00000001", "nothing"]);
    // The batch gives what one lookup per id gives.
    for (const [id, n] of lengths) expect({ id, n }).toEqual({ id, n: reads.sharedPrefixLength(id) });
  });
  await exercise("show a session's legs, notices and messages", async () => {
    reads.legsOf("ses-00000001");
    reads.listCallbacks("ses-00000001");
    await backend.listMessages("ses-00000001");
  });
  // A leg's own lookups.
  await exercise("leg lookups", async () => {
    await backend.getLeg("leg-00000001");
    await backend.runIdTaken("run-leg-00000001");
    await backend.sessionLegState("ses-00000001");
    if (branch) await backend.getBranch(branch.id);
  });
  // Events owed: the push's query for one event, a delivery pass over every handler, a consumer's page.
  const transition = raw.query<{ id: string }, []>("SELECT id FROM status_transitions WHERE terminal_event = 1 LIMIT 1").get()!;
  await exercise("events owed to the handlers of one event (push)", () => backend.notify.owedToHandlers({ hostId: "h", uid: 1000, transitionId: transition.id, limit: 256 }));
  await exercise("a push on a host with no live handler (the probe alone)", () => backend.notify.owedToHandlers({ hostId: "no-such-host", uid: 1000, transitionId: transition.id, limit: 256 }));
  await exercise("events owed to every handler (delivery pass)", () => backend.notify.owedToHandlers({ hostId: "h", uid: 1000, limit: 100 }));
  await exercise("events owed to one handler", () => backend.notify.owedToHandlers({ consumer: "cb:x", limit: 100 }));
  await exercise("events owed to a consumer", () => backend.notify.owedToConsumer("reader", 100));
  await exercise("dead deliveries", () => backend.notify.listDead(100));
  await exercise("an event's context", () => backend.notify.eventContext(transition.id));
  // The sweeps' candidate queries.
  await exercise("running sessions (reaper, doctor, linked finalizer)", () => backend.listRunningSessions({ afterId: null, limit: 100 }));
  await exercise("running sessions after a cursor", () => backend.listRunningSessions({ afterId: "ses-0", limit: 100 }));
  await exercise("one sweep session", () => backend.getSweepSession("ses-00000001"));
  await exercise("prune candidates", () => backend.listPruneCandidates({ terminalStatuses: ["completed", "failed"], cutoff: T0, afterId: null, limit: 100 }));
  await exercise("prune candidates after a cursor", () => backend.listPruneCandidates({ terminalStatuses: ["completed", "failed"], cutoff: T0, afterId: "ses-0", limit: 100 }));
  await exercise("legs using a directory (prune --files)", () => backend.legsUsingDirectory("/runs/r1"));
  await exercise("prune's candidate count", () => backend.countPruneCandidates({ terminalStatuses: ["completed", "failed"], cutoff: T0 }));
  await exercise("a session's branches (li show)", () => reads.branchesOf("ses-00000001"));
  // Cron schedules: the due query every watcher pass runs, a schedule by name, the list, its newest decision,
  // and the cron pass's writes (claim, fire record, cursor), rolled back.
  await exercise("schedules due (every watcher pass)", () => backend.cron.dueSchedules(T0, 32));
  await exercise("the earliest due schedule (when a watcher looks next)", () => backend.cron.earliestDue());
  await exercise("a schedule by name, the list, its newest fires", async () => {
    await backend.cron.getSchedule("nightly");
    await backend.cron.listSchedules();
    await backend.cron.listFires("sched-00000001", 1);
  });
  const undo = new Error("roll back");
  await exercise("a cron pass's writes", () =>
    backend
      .transaction(async (tx) => {
        await tx.cron.claimSchedule("sched-00000001");
        await tx.cron.insertFire({ schedule_id: "sched-00000001", due_at: T0, outcome: "fired", run_id: "sch-00000001", host_id: "h", decided_at: T0 });
        await tx.cron.advance("sched-00000001", T0, T0 + 60, "sch-00000001", T0);
        await tx.cron.setPaused("sched-00000001", true, null, T0);
        await tx.cron.deleteSchedule("sched-00000001");
        throw undo;
      })
      .catch((error: unknown) => {
        if (error !== undo) throw error;
      }),
  );
  // Scheduled runs (§19): leasing, the pass's candidates, the views' counts.
  const schedule = backend.schedule;
  await exercise("queues", () => schedule.listQueues());
  await exercise("queues a dispatch may lease from (every watcher pass)", () => schedule.queuesToDispatch());
  await exercise("lease candidates of a queue", () => schedule.leaseCandidates("q", 50));
  await exercise("running runs of a queue, per host and fleet-wide", async () => {
    await schedule.countRunning("q", "h");
    await schedule.countRunning("q", null);
  });
  await exercise("a run's place in its queue", () => schedule.queuedAhead("q", T0, "r"));
  await exercise("a queue's newest runs and its count (li ls's places)", () => schedule.queuedTail("q", 64));
  await exercise("expired leases", () => schedule.expiredLeases(T0, 100));
  await exercise("due retries", () => schedule.dueRetries(T0, 100));
  await exercise("waiting runs", () => schedule.waitingRuns(100));
  await exercise("runs whose leg's session ended", () => schedule.runsWithEndedSession(100));
  await exercise("the run of a session", () => schedule.runOfSession("ses-00000001"));
  await exercise("a run's retry", () => schedule.chainChild("r"));
  await exercise("queue counts (li queue ls)", () => schedule.queueCounts());
  await exercise("a run's dependencies and dependents", async () => {
    await schedule.dependenciesOf("r");
    await schedule.dependentsOf("r");
  });
  // The reads inside write transactions (the sweeps' guard, a leg's next seq, the guarded write's read)
  // and every statement of a prune batch, in a transaction rolled back at the end.
  const rollback = new Error("roll back");
  await exercise("reads under the write lock, and a prune batch", () =>
    backend
      .transaction(async (tx) => {
        await tx.readSweepGuard("ses-00000001");
        await tx.nextLegSeq("ses-00000001");
        await tx.readStatus("session", "ses-00000001");
        await tx.legsOfSessions(["ses-00000002"]);
        for (const statement of PRUNE_BATCH_STATEMENTS) {
          if (statement === "record_admin_event" || statement === "read_legs") continue; // an INSERT; legsOfSessions above
          await tx.pruneStatement(statement, ["ses-00000002"], { terminalStatuses: ["completed"], cutoff: T0 });
        }
        throw rollback;
      })
      .catch((error: unknown) => {
        if (error !== rollback) throw error;
      }),
  );
  void ledger;
});

afterAll(() => {
  raw?.close();
});

describeSqliteOnly("query-plans")("query plans", () => {
  test("every exercise ran at least one statement", () => {
    expect(ranBy.size).toBeGreaterThan(100);
    for (const [label, ran] of ranBy) expect({ label, statements: ran.length > 0 }).toEqual({ label, statements: true });
  });

  test("no listing or lookup scans a table or sorts its whole result for ORDER BY", () => {
    const bad: string[] = [];
    const seen = new Set<string>();
    const usedExcuses = new Set<(typeof BOUNDED_SORTS)[number]>();
    for (const [label, ran] of ranBy) {
      for (const { sql, params } of ran) {
        if (!READS_ONLY.test(sql)) continue;
        const key = `${sql}\u0000${JSON.stringify(params)}`;
        if (seen.has(key)) continue;
        seen.add(key);
        const plan = raw.query<{ detail: string }, never[]>(`EXPLAIN QUERY PLAN ${sql}`).all(...(params as never[])).map((r) => r.detail);
        const excused = BOUNDED_SORTS.find((b) => b.sql.test(sql));
        if (excused) usedExcuses.add(excused);
        // A recursive CTE's own rows (a retry chain's links, reached by index each step) are the statement's, not a table.
        const ctes = [...sql.matchAll(/WITH RECURSIVE (\w+)/g)].map((m) => m[1]!);
        // So are a derived table's (`(SELECT … LIMIT n) alias`: a host filter's two pages).
        const derived = [...sql.matchAll(/\) (\w+)\b/g)].map((m) => m[1]!).filter((name) => !["AS", "AND", "OR", "ORDER", "WHERE", "ESCAPE"].includes(name.toUpperCase()));
        const problems = planProblems(plan).filter((p) => !(excused && p.includes("TEMP B-TREE")) && ![...ctes, ...derived].some((c) => p === `SCAN ${c}`));
        if (problems.length > 0) bad.push(`${label}: ${problems.join("; ")}\n    ${sql.replace(/\s+/g, " ").slice(0, 300)}\n    plan: ${plan.join(" | ")}`);
      }
    }
    expect(seen.size).toBeGreaterThan(20);
    expect(bad).toEqual([]);
    expect(BOUNDED_SORTS.filter((b) => !usedExcuses.has(b)).map((b) => b.why)).toEqual([]);
  });

  test("li queue ls counts from one covering index: no table row read, no sort for GROUP BY (flat with thousands queued)", () => {
    const ran = ranBy.get("queue counts (li queue ls)")!;
    expect(ran.length).toBe(1);
    const plan = raw.query<{ detail: string }, never[]>(`EXPLAIN QUERY PLAN ${ran[0]!.sql}`).all(...(ran[0]!.params as never[])).map((r) => r.detail);
    expect(plan.length).toBeGreaterThan(0);
    expect(plan.filter((line) => !/ USING COVERING INDEX /.test(line) || /TEMP B-TREE/.test(line))).toEqual([]);
  });

  test("li ui's list: a later page seeks its index by key (no OFFSET, no row before it read); host and text walk the index newest first, stopping at the page's LIMIT", () => {
    const planOf = (label: string, table = "sessions") => {
      const ran = ranBy.get(label)!.find((r) => r.sql.includes(`FROM ${table} e`))!;
      return raw.query<{ detail: string }, never[]>(`EXPLAIN QUERY PLAN ${ran.sql}`).all(...(ran.params as never[])).map((r) => r.detail);
    };
    for (const name of ["session", "every kind"]) {
      expect(planOf(`ui list ${name} after a row --limit 50`)[0]).toBe("SEARCH e USING INDEX sessions_updated_idx ((updated_at,id)<(?,?))");
      expect(planOf(`ui list ${name} --status running after a row --limit 50`)[0]).toBe("SEARCH e USING INDEX sessions_status_idx (status=? AND (updated_at,id)<(?,?))");
      // A host is sought in the session row's copy of its current leg's host, by name and by machine, each
      // index walked in the listing's order (the old code walked every session newest first, reading its leg).
      const sessionsRead = (plan: string[]) => plan.filter((line) => /^(SCAN|SEARCH) e /.test(line));
      expect(sessionsRead(planOf(`ui list ${name} --host --limit 50`))).toEqual(["SEARCH e USING INDEX sessions_host_name_idx (host_name=?)", "SEARCH e USING INDEX sessions_host_machine_idx (host_machine=?)"]);
      expect(sessionsRead(planOf(`ui list ${name} --host after a row --limit 50`))).toEqual([
        "SEARCH e USING INDEX sessions_host_name_idx (host_name=? AND (updated_at,id)<(?,?))",
        "SEARCH e USING INDEX sessions_host_machine_idx (host_machine=? AND (updated_at,id)<(?,?))",
      ]);
      expect(sessionsRead(planOf(`ui list ${name} --host id --limit 50`))).toEqual(["SEARCH e USING INDEX sessions_host_name_idx (host_name=?)", "SEARCH e USING INDEX sessions_host_machine_idx (host_machine=?)"]);
      // With a status, the (host, status, updated_at, id) indexes: a busy host's few running rows, not all its rows.
      expect(sessionsRead(planOf(`ui list ${name} --status --host --limit 50`))).toEqual([
        "SEARCH e USING INDEX sessions_host_name_status_idx (host_name=? AND status=?)",
        "SEARCH e USING INDEX sessions_host_machine_status_idx (host_machine=? AND status=?)",
      ]);
      expect(planOf(`ui list ${name} text after a row --limit 50`)[0]).toBe("SEARCH e USING INDEX sessions_updated_idx ((updated_at,id)<(?,?))");
      // No index finds a text's rows among the others: the walk is the index's order, no sort.
      const plan = planOf(`ui list ${name} text --limit 50`);
      expect(plan[0]).toBe("SCAN e USING INDEX sessions_updated_idx");
      expect(plan.filter((line) => /TEMP B-TREE/.test(line))).toEqual([]);
    }
    // The other kinds page the same way, each by its own (updated_at, id) index.
    expect(planOf("ui list every kind after a row --limit 50", "invocations")[0]).toBe("SEARCH e USING INDEX invocations_updated_idx ((updated_at,id)<(?,?))");
  });

  test("the check itself recognises a full scan and a sort for ORDER BY", () => {
    const plan = (sql: string, ...params: unknown[]) => raw.query<{ detail: string }, never[]>(`EXPLAIN QUERY PLAN ${sql}`).all(...(params as never[])).map((r) => r.detail);
    expect(planProblems(plan("SELECT * FROM sessions WHERE +status = ?", "running"))).not.toEqual([]);
    expect(planProblems(plan("SELECT id FROM sessions ORDER BY ended_at LIMIT 1"))).not.toEqual([]);
    expect(planProblems(plan("SELECT id FROM sessions WHERE id = ?", "x"))).toEqual([]);
  });
});

// li ls on a ledger with a long queue: a queued run's place was counted row by row for each run on the page
// (50 counts over the whole queue with 10,000 queued: 4.5x the empty ledger's li ls). Now each queue on
// the page is counted once, with its newest runs, and a run's place is read from that tail.
describeSqliteOnly("query-plans")("query plans: li ls over a long queue", () => {
  let q: TempLedger;
  let qlog: Ran[];
  let qraw: Database;
  let qreads: SqliteReads;
  const request = { version: 1 as const, argv: ["true"], workdir: "/", env: { PATH: "/usr/bin:/bin" }, options: {} };

  beforeAll(async () => {
    if (onPostgres) return;
    let clock = T0;
    q = tempLedger({ now: () => clock });
    // 150 runs in "long" (some created in the same second: their order is by id), 5 in "short", 20 more in "long".
    for (let i = 0; i < 150; i++) {
      if (i % 3 === 0) clock++;
      await submitRun(q.ledger, { queue: "long", request });
    }
    for (let i = 0; i < 5; i++) await submitRun(q.ledger, { queue: "short", request }), clock++;
    for (let i = 0; i < 20; i++) await submitRun(q.ledger, { queue: "long", request }), clock++;
    q.ledger.close();
    qraw = new Database(q.dbPath, { strict: true });
    qlog = [];
    qreads = new SqliteReads(recording(new Database(q.dbPath, { strict: true }), qlog));
  });

  afterAll(() => qraw?.close());

  test("a page of 50 queued runs counts each queue once, not each run, and reads each run once; every place is the run's place", async () => {
    const opened = { reads: qreads, wake: () => Promise.reject(new Error("unused")), now: () => T0 + 1000, ready: async () => {}, close: () => {} };
    const { entries } = await listEntries(opened as never, { kinds: ENTITY_KINDS, limit: 50 });
    expect(entries.length).toBe(50);
    const queues = new Set(entries.map((e) => e.schedule?.queue));
    expect([...queues].sort()).toEqual(["long", "short"]);
    // Each place against a direct count of the runs ahead (created earlier, or in the same second with a lower id).
    for (const e of entries) {
      const run = qraw.query<{ queue: string; created_at: number }, [string]>("SELECT queue, created_at FROM schedule_runs WHERE id = ?").get(e.row.id)!;
      const ahead = qraw
        .query<{ n: number }, [string, number, number, string]>("SELECT COUNT(*) AS n FROM schedule_runs WHERE queue = ? AND status = 'queued' AND (created_at < ? OR (created_at = ? AND id < ?))")
        .get(run.queue, run.created_at, run.created_at, e.row.id)!.n;
      expect({ id: e.row.id, position: e.schedule?.position }).toEqual({ id: e.row.id, position: ahead });
    }
    // The statements that counted the queue's runs: one per queue on the page (the old code ran one per run).
    const counts = qlog.filter((r) => /COUNT\(\*\)/.test(r.sql) && /FROM schedule_runs WHERE queue = \? AND status = 'queued'/.test(r.sql));
    expect(counts.length).toBe(queues.size);
    // Each run on the page read once (its row serves its place and its view).
    expect(qlog.filter((r) => /^SELECT \* FROM schedule_runs WHERE id = \?$/.test(r.sql.trim())).length).toBe(entries.length);
    // And each plan reads indexes only, without a sort.
    for (const { sql, params } of counts) {
      const plan = qraw.query<{ detail: string }, never[]>(`EXPLAIN QUERY PLAN ${sql}`).all(...(params as never[])).map((r) => r.detail);
      expect(plan.filter((line) => /^(SEARCH|SCAN) schedule_runs/.test(line) && !/ USING COVERING INDEX /.test(line))).toEqual([]);
      expect(plan.filter((line) => /TEMP B-TREE/.test(line))).toEqual([]);
    }
  });
});
