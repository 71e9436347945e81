import { describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { join } from "node:path";
import type { SqliteBackend } from "../../src/ledger/sqlite/backend.ts";
import { prune, pruneLine } from "../../src/sweeps/prune.ts";
import { addConsumer as registerConsumer, listOwed } from "../../src/notify/consumers.ts";
import { PRUNE_BATCH_STATEMENTS, type PruneStatement } from "../../src/ledger/rules/prune.ts";
import { describeSqliteOnly, testSqliteOnly } from "../helpers/backends.ts";
import { fakeClock, rowsOf, tempLedger } from "../helpers/ledger.ts";
import { insertSession, query } from "../helpers/sweep-fixtures.ts";
import { lineReader } from "../helpers/lines.ts";
import type { Ledger } from "../../src/ledger/ledger.ts";

const DAY = 86400;
const NOW = 1_900_000_000;
const OLD = NOW - 40 * DAY;

function setup() {
  const clock = fakeClock(NOW);
  const t = tempLedger({ now: clock.now });
  return { ...t, clock };
}

/** A terminal session with two legs, a branch, messages, a leg registration (acked) and history. */
async function fullSession(ledger: Ledger, id: string, opts: { updatedAt?: number; status?: string } = {}): Promise<void> {
  const at = opts.updatedAt ?? OLD;
  await insertSession(ledger, {
    id,
    startedAt: at - 100,
    updatedAt: at - 100,
    legs: [
      { id: `${id}-l1`, startedAt: at - 100, endedAt: at - 90, status: "completed" },
      { id: `${id}-l2`, startedAt: at - 50, endedAt: at, status: "completed" },
    ],
  });
  await ledger.transact(async (tx) => {
    await tx.insertBranch({ id: `${id}-b`, session_id: id, name: null, metadata: null, created_at: at, updated_at: at });
    await tx.insertMessage({ id: `${id}-m1`, session_id: id, branch_id: `${id}-b`, leg_id: `${id}-l1`, role: "assistant", content: "hi", truncated: 0, created_at: at });
  });
  if (opts.status !== "running") {
    const outcome = await ledger.transition("session", id, { newStatus: opts.status ?? "completed", reasonCode: "run.completed.ok", extraFields: { ended_at: at } });
    if (outcome.result !== "applied") throw new Error("setup write failed");
  }
  await rowsOf(ledger).run("UPDATE sessions SET updated_at = ? WHERE id = ?", at, id);
}

async function countsFor(ledger: Ledger, id: string) {
  const one = async (sql: string) => (await query<{ n: number }>(ledger, sql, id))[0]!.n;
  return {
    session: await one("SELECT COUNT(*) AS n FROM sessions WHERE id = ?"),
    transitions: await one("SELECT COUNT(*) AS n FROM status_transitions WHERE entity_type = 'session' AND entity_id = ?"),
    legs: await one("SELECT COUNT(*) AS n FROM legs WHERE session_id = ?"),
    branches: await one("SELECT COUNT(*) AS n FROM branches WHERE session_id = ?"),
    messages: await one("SELECT COUNT(*) AS n FROM messages WHERE session_id = ?"),
    registrations: await one("SELECT COUNT(*) AS n FROM terminal_callbacks WHERE session_id = ?"),
  };
}

async function addConsumer(ledger: Ledger, name: string, watermark: number, retired = false) {
  await rowsOf(ledger).run("INSERT INTO consumers (name, watermark, registered_at, retired_at) VALUES (?, ?, ?, ?)", name, watermark, NOW - 50 * DAY, retired ? NOW : null);
}

async function terminalEventOf(ledger: Ledger, id: string): Promise<{ id: string; seq: number }> {
  return (await query<{ id: string; seq: number }>(ledger, "SELECT id, seq FROM status_transitions WHERE entity_id = ? AND terminal_event = 1 ORDER BY seq DESC LIMIT 1", id))[0]!;
}

describe("li state prune", () => {
  test("deletes old terminal sessions with everything that belongs to them, nulls soft references, and records an admin event", async () => {
    const { ledger } = setup();
    await fullSession(ledger, "old");
    await fullSession(ledger, "recent", { updatedAt: NOW - 2 * DAY });
    await fullSession(ledger, "old-running", { status: "running" });
    await ledger.createEntity("play", { id: "p1", fields: { session_id: "old" } });
    await insertSession(ledger, { id: "linker", startedAt: NOW, updatedAt: NOW, linkedSessionId: "old" });
    // A leg registration of the old session, its consumer and a settled delivery.
    await rowsOf(ledger).run("INSERT INTO terminal_callbacks (id, scope, consumer, session_id, leg_id, argv, origin, host_id, created_at) VALUES ('cb1', 'leg', 'cb:cb1', 'old', 'old-l2', '[\"true\"]', 'flag', 'h', ?)", OLD);
    await addConsumer(ledger, "cb:cb1", 0);
    const event = await terminalEventOf(ledger, "old");
    await rowsOf(ledger).run("INSERT INTO terminal_deliveries (transition_id, consumer, state, attempts, created_at, updated_at, acked_at) VALUES (?, 'cb:cb1', 'acked', 1, ?, ?, ?)", event.id, OLD, OLD, OLD);
    const before = await countsFor(ledger, "old");

    const summary = await prune.runOnce(ledger, NOW, prune.validate({}));

    expect(pruneLine(summary)).toBe(`pruned sessions=1 transitions=${before.transitions} legs=2 skipped_owed=0`);
    expect(await countsFor(ledger, "old")).toEqual({ session: 0, transitions: 0, legs: 0, branches: 0, messages: 0, registrations: 0 });
    expect((await query(ledger, "SELECT * FROM terminal_deliveries")).length).toBe(0);
    expect((await query(ledger, "SELECT * FROM consumers WHERE name = 'cb:cb1'")).length).toBe(0);
    expect((await query<{ session_id: string | null }>(ledger, "SELECT session_id FROM plays WHERE id = 'p1'"))[0]!.session_id).toBeNull();
    expect((await query<{ linked_session_id: string | null }>(ledger, "SELECT linked_session_id FROM sessions WHERE id = 'linker'"))[0]!.linked_session_id).toBeNull();
    expect((await countsFor(ledger, "recent")).session).toBe(1);
    expect(await countsFor(ledger, "old-running")).toMatchObject({ session: 1, legs: 2, branches: 1, messages: 1 });
    const admin = await query<{ payload: string }>(ledger, "SELECT payload FROM admin_events WHERE event_type = 'prune'");
    expect(admin.length).toBe(1);
    expect(JSON.parse(admin[0]!.payload)).toMatchObject({ sessions: 1, transitions: before.transitions, legs: 2, branches: 1, messages: 1, registrations: 1, deliveries: 1 });
  });

  test("never touches a running session, however old", async () => {
    const { ledger, dump } = setup();
    await fullSession(ledger, "ancient-running", { status: "running", updatedAt: NOW - 400 * DAY });
    const before = await dump();
    const summary = await prune.runOnce(ledger, NOW, prune.validate({ keepDays: 0 }));
    expect(summary.sessions).toBe(0);
    expect(await dump()).toEqual(before);
  });

  test("skips and counts sessions with events still owed to a registered consumer; acked, dead or retired ones do not hold it back", async () => {
    const { ledger } = setup();
    for (const id of ["before-watermark", "owed", "acked", "dead"]) await fullSession(ledger, id);
    // "audit" registered after "before-watermark" ended; "gone" is owed everything but is retired.
    await addConsumer(ledger, "audit", (await terminalEventOf(ledger, "before-watermark")).seq);
    await addConsumer(ledger, "gone", 0, true);
    for (const [id, state] of [["acked", "acked"], ["dead", "dead"]] as const) {
      await rowsOf(ledger).run("INSERT INTO terminal_deliveries (transition_id, consumer, state, attempts, created_at, updated_at) VALUES (?, 'audit', ?, 1, ?, ?)", (await terminalEventOf(ledger, id)).id, state, NOW, NOW);
    }
    const summary = await prune.runOnce(ledger, NOW, prune.validate({}));
    // "before-watermark" completed before "audit" registered: it was never owed it.
    expect(summary.skipped_owed).toBe(1);
    expect(summary.sessions).toBe(3);
    expect((await countsFor(ledger, "owed")).session).toBe(1);
    expect(pruneLine(summary)).toMatch(/skipped_owed=1$/);
  });

  test("a --dry-run reports exactly the counts the real run then deletes, and changes nothing", async () => {
    const { ledger, dump } = setup();
    for (let i = 0; i < 7; i++) await fullSession(ledger, `s${i}`);
    await fullSession(ledger, "owed");
    await addConsumer(ledger, "audit", (await terminalEventOf(ledger, "owed")).seq - 1);
    const before = await dump();
    const dry = await prune.runOnce(ledger, NOW, prune.validate({ dryRun: true, batchSize: 3 }));
    expect(await dump()).toEqual(before);
    const real = await prune.runOnce(ledger, NOW, prune.validate({ batchSize: 3 }));
    expect(pruneLine(dry)).toBe(pruneLine(real));
    expect({ ...dry, dry_run: true, files: null }).toEqual({ ...real, dry_run: true, files: null });
    expect(real.sessions).toBe(7);
    expect(real.batches).toBe(3);
  });

  testSqliteOnly("same-connection-write")("a batch in which a candidate survives its deletes is rolled back whole", async () => {
    const { ledger } = setup();
    await fullSession(ledger, "a");
    await fullSession(ledger, "b");
    const before = { a: await countsFor(ledger, "a"), b: await countsFor(ledger, "b") };
    const raw = (ledger.backend as SqliteBackend).db;
    const summary = await prune.runOnce(ledger, NOW, prune.validate({}), {
      hooks: {
        // Inside the batch, on its own connection: a row with a candidate's id reappears after the delete.
        afterStatement: (statement) => {
          if (statement === "delete_sessions") raw.run("INSERT INTO sessions (id, status, created_at, updated_at) VALUES ('b', 'completed', 1, 1)");
        },
      },
    });
    expect(summary.rolled_back).toBe(1);
    expect(summary.sessions).toBe(0);
    expect(await countsFor(ledger, "a")).toEqual(before.a);
    expect(await countsFor(ledger, "b")).toEqual(before.b);
    expect((await query(ledger, "SELECT * FROM admin_events WHERE event_type = 'prune'")).length).toBe(0);
  });

  test("a seq is never handed out again after the newest history is pruned: a consumer at watermark N is owed the next event (SPEC §9)", async () => {
    const { ledger } = setup();
    await fullSession(ledger, "recent", { updatedAt: NOW - 2 * DAY });
    await fullSession(ledger, "old");
    // Registered now: its watermark N is the highest seq, which belongs to the old session's history.
    const { watermark } = await registerConsumer(ledger, "audit");
    expect((await terminalEventOf(ledger, "old")).seq).toBe(watermark);
    const summary = await prune.runOnce(ledger, NOW, prune.validate({}));
    expect(summary.sessions).toBe(1);
    // The precondition: the newest history is gone, so MAX(seq) alone would hand out a seq ≤ N.
    expect((await query<{ m: number }>(ledger, "SELECT MAX(seq) AS m FROM status_transitions"))[0]!.m).toBeLessThan(watermark);

    await fullSession(ledger, "new", { updatedAt: NOW });
    const event = await terminalEventOf(ledger, "new");
    expect(event.seq).toBeGreaterThan(watermark);
    expect((await listOwed(ledger, "audit")).map((row) => row.id)).toEqual([event.id]);
  });

  test("bad options are usage errors naming the flag", () => {
    expect(() => prune.validate({ keepDays: -1 })).toThrow(/--keep-days/);
  });
});

const WORKER = join(import.meta.dir, "workers/reopen.ts");
const BUN = process.execPath;

function startReopen(ledger: Ledger, sessionId: string) {
  const proc = Bun.spawn([BUN, WORKER, ledger.location, sessionId, `${sessionId}-b`, String(NOW)], { stdout: "pipe", stderr: "inherit" });
  const next = lineReader(proc.stdout);
  // "" once the worker's output has ended: the assertions then name what was expected instead.
  return { proc, next: async () => (await next()) ?? "" };
}

describeSqliteOnly("prune-vs-reopen-sqlite")("ADR-0105 Verification 6, prune side: a resume racing the prune", () => {
  test("the first statement a batch issues against sessions is a write, and from it on no other process can write", async () => {
    const { ledger } = setup();
    await fullSession(ledger, "s");
    await fullSession(ledger, "t");
    const seen: PruneStatement[] = [];
    let otherCouldWrite = null as boolean | null;
    // On SQLite, BEGIN IMMEDIATE alone already holds the write lock: pin that the statement itself writes
    // every candidate (so a backend with row locks holds them) and changes nothing in them.
    const raw = (ledger.backend as SqliteBackend).db;
    const totalChanges = () => raw.query<{ n: number }, []>("SELECT total_changes() AS n").get()!.n;
    const rows = () => raw.query("SELECT * FROM sessions WHERE id IN ('s', 't') ORDER BY id").all();
    let changesBefore = 0;
    let rowsBefore: unknown[] = [];
    let lockWrote = -1;
    let rowsAfterLock: unknown[] = [];
    await prune.runOnce(ledger, NOW, prune.validate({}), {
      hooks: {
        beforeBatch: () => {
          changesBefore = totalChanges();
          rowsBefore = rows();
        },
        afterStatement: (statement) => {
          seen.push(statement);
          if (statement === "lock_candidates") {
            lockWrote = totalChanges() - changesBefore;
            rowsAfterLock = rows();
            const other = new Database(ledger.location);
            other.run("PRAGMA busy_timeout = 0");
            try {
              other.run("BEGIN IMMEDIATE");
              other.run("ROLLBACK");
              otherCouldWrite = true;
            } catch {
              otherCouldWrite = false;
            }
            other.close();
          }
        },
      },
    });
    expect(seen[0]).toBe("lock_candidates");
    expect(seen).toEqual([...PRUNE_BATCH_STATEMENTS]);
    expect(lockWrote).toBe(2);
    expect(rowsAfterLock).toEqual(rowsBefore);
    expect(otherCouldWrite).toBe(false);
  });

  test("a resume that commits before the batch takes its lock wins: the session keeps its row, history and associations", async () => {
    const { ledger } = setup();
    await fullSession(ledger, "s");
    const before = await countsFor(ledger, "s");
    let worker: string[] = [];
    const summary = await prune.runOnce(ledger, NOW, prune.validate({}), {
      hooks: {
        beforeBatch: async () => {
          const w = startReopen(ledger, "s");
          worker = [await w.next(), await w.next()];
          await w.proc.exited;
        },
      },
    });
    expect(worker).toEqual(["free", "reopened s"]);
    expect([summary.sessions, summary.skipped_reopened]).toEqual([0, 1]);
    expect(await countsFor(ledger, "s")).toEqual({ ...before, transitions: before.transitions + 1, legs: before.legs + 1 });
    expect((await query<{ status: string }>(ledger, "SELECT status FROM sessions WHERE id = 's'"))[0]!.status).toBe("running");
  });

  // What a backend whose lock failed would let through: a reopen landing between two destructive
  // statements, simulated on the batch's own connection. Each statement is guarded by the post-condition:
  // the reopened session survives the session delete, so the whole batch is abandoned.
  const DESTRUCTIVE = PRUNE_BATCH_STATEMENTS.slice(PRUNE_BATCH_STATEMENTS.indexOf("delete_deliveries"), PRUNE_BATCH_STATEMENTS.indexOf("delete_sessions"));
  for (const reopenAfter of DESTRUCTIVE) {
    test(`a reopen landing right after ${reopenAfter} rolls the batch back whole: the session keeps its row, history and associations`, async () => {
      const { ledger } = setup();
      await fullSession(ledger, "s");
      await fullSession(ledger, "other");
      await ledger.createEntity("play", { id: "p1", fields: { session_id: "s" } });
      const before = { s: await countsFor(ledger, "s"), other: await countsFor(ledger, "other") };
      const raw = (ledger.backend as SqliteBackend).db;
      const summary = await prune.runOnce(ledger, NOW, prune.validate({}), {
        hooks: {
          afterStatement: (statement) => {
            if (statement === reopenAfter) raw.run("UPDATE sessions SET status = 'running', ended_at = NULL, updated_at = ? WHERE id = 's'", [NOW]);
          },
        },
      });
      expect([summary.rolled_back, summary.sessions]).toEqual([1, 0]);
      expect(await countsFor(ledger, "s")).toEqual(before.s);
      expect(await countsFor(ledger, "other")).toEqual(before.other);
      expect((await query<{ session_id: string | null }>(ledger, "SELECT session_id FROM plays WHERE id = 'p1'"))[0]!.session_id).toBe("s");
      expect((await query<{ status: string }>(ledger, "SELECT status FROM sessions WHERE id = 's'"))[0]!.status).toBe("completed");
    });
  }

  for (const pauseAfter of PRUNE_BATCH_STATEMENTS) {
    test(`a resume arriving while the batch is paused after ${pauseAfter} cannot land mid-batch: the prune applies whole and the resume starts a new session`, async () => {
      const { ledger } = setup();
      await fullSession(ledger, "s");
      let worker: ReturnType<typeof startReopen> | null = null;
      let probe = "";
      const summary = await prune.runOnce(ledger, NOW, prune.validate({}), {
        hooks: {
          afterStatement: async (statement) => {
            if (statement !== pauseAfter) return;
            worker = startReopen(ledger, "s");
            probe = await worker.next();
          },
        },
      });
      const outcome = await worker!.next();
      await worker!.proc.exited;
      expect(probe).toBe("blocked");
      expect(summary.sessions).toBe(1);
      expect(outcome).toBe("new_session s-new");
      // Nothing of the old session is left half-deleted…
      expect(await countsFor(ledger, "s")).toEqual({ session: 0, transitions: 0, legs: 0, branches: 0, messages: 0, registrations: 0 });
      // …and the resume is persisted under its new session, on the same branch.
      expect((await query<{ status: string }>(ledger, "SELECT status FROM sessions WHERE id = 's-new'"))[0]!.status).toBe("running");
      expect((await query<{ session_id: string }>(ledger, "SELECT session_id FROM branches WHERE id = 's-b'"))[0]!.session_id).toBe("s-new");
    });
  }
});
