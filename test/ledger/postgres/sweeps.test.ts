// The sweeps' statements on PostgreSQL (SPEC §12): each read and each prune statement answers as SQLite's
// does on the same rows, and the prune batch's first statement locks every candidate — without changing
// it — so a guarded write on a candidate waits for the batch to commit.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Database } from "bun:sqlite";
import { connectPg, type PgClient } from "../../../src/ledger/postgres/client.ts";
import * as pgSweeps from "../../../src/ledger/postgres/sweeps.ts";
import * as liteSweeps from "../../../src/ledger/sqlite/sweeps.ts";
import { SESSION_TERMINAL_STATUSES } from "../../../src/lifecycle/policy.ts";
import { PRUNE_BATCH_STATEMENTS, type PruneSqlStatement } from "../../../src/ledger/rules/prune.ts";
import { asSuperuser, describePostgres, postgresCluster, usePostgresDatabase } from "../../helpers/postgres.ts";
import { until } from "../../helpers/until.ts";
import { arrange, leg, pgLedgerClient, session, sqliteLedgerDb, transition, type Rows } from "./store-fixtures.ts";

const OLD = 1_700_000_000;
const CUTOFF = 1_750_000_000;
const RECENT = 1_800_000_000;

/** Running sessions with current, open and ended legs; terminal ones old and new; directories with awkward names. */
const ROWS: Rows = {
  sessions: [
    session("s-run-1", "running", RECENT, { current_leg_id: "l-1b", linked_session_id: "s-old-1" }),
    session("s-run-2", "running", RECENT, { current_leg_id: "l-2a" }),
    session("s-run-3", "running", RECENT),
    session("s-old-1", "completed", OLD, { linked_session_id: "s-old-2" }),
    session("s-old-2", "failed", OLD),
    session("s-new-1", "completed", RECENT),
    session("s-old-3", "cancelled", OLD),
  ],
  legs: [
    // s-run-1: an ended first leg, a current second, an unended third (a deferred one).
    leg("l-1a", "s-run-1", 1, { ended_at: RECENT - 5, status: "failed" }),
    leg("l-1b", "s-run-1", 2, { heartbeat_at: null }),
    leg("l-1c", "s-run-1", 3, { pid: null, pid_start_ticks: null }),
    leg("l-2a", "s-run-2", 1, { ended_at: RECENT - 1 }),
    leg("l-old-1", "s-old-1", 1, { state_root: "/runs/100%_dir", artifact_root: "/runs/100%_dir/art", ended_at: OLD }),
    leg("l-old-2", "s-old-2", 1, { state_root: "/runs/100%_dir0", artifact_root: "/elsewhere/x", ended_at: OLD }),
    leg("l-old-3", "s-old-3", 1, { state_root: "/runs/100%_dir-b", artifact_root: "/runs/100%_dir/deep/er", ended_at: OLD }),
  ],
  plays: [{ id: "p-1", status: "running", created_at: OLD, updated_at: OLD, session_id: "s-old-1" }],
  status_transitions: [
    transition("t-1", 1, "session", "s-old-1"),
    transition("t-2", 2, "session", "s-old-2", { status: "failed", reason_code: "session.failed.exit_nonzero" }),
    transition("t-3", 3, "session", "s-new-1"),
  ],
  branches: [{ id: "b-1", session_id: "s-old-1", created_at: OLD, updated_at: OLD }],
  messages: [{ id: "m-1", session_id: "s-old-1", role: "user", content: "hello", created_at: OLD }],
  terminal_callbacks: [
    { id: "cb-1", scope: "leg", consumer: "cb:1", session_id: "s-old-3", leg_id: "l-old-3", argv: '["true"]', origin: "test", host_id: "host-a", created_at: OLD },
  ],
  consumers: [{ name: "cb:1", watermark: 0, registered_at: OLD, retired_at: OLD }],
  terminal_deliveries: [{ transition_id: "t-1", consumer: "cb:gone", state: "acked", attempts: 1, created_at: OLD, updated_at: OLD }],
};

describePostgres("the sweeps' statements on PostgreSQL (§12)", () => {
  const db = usePostgresDatabase();

  describe("reads answer as SQLite's do on the same rows", () => {
    let pg: PgClient;
    let lite: Database;
    beforeAll(async () => {
      pg = await pgLedgerClient(db);
      lite = sqliteLedgerDb();
      await arrange(lite, pg, ROWS);
    });
    afterAll(async () => {
      await pg.close();
      lite.close();
    });

    test("running sessions, paged by id, each with its current leg first and then its unended legs (pids and ticks as numbers)", async () => {
      const all = await pgSweeps.listRunningSessions(pg.sql, { limit: 10 });
      expect(all).toEqual(liteSweeps.listRunningSessions(lite, { limit: 10 }));
      expect(all.map((s) => [s.id, s.legs.map((l) => l.id)])).toEqual([
        ["s-run-1", ["l-1b", "l-1c"]],
        ["s-run-2", ["l-2a"]],
        ["s-run-3", []],
      ]);
      expect(all[0]!.linked_status).toBe("completed");
      expect(all[0]!.legs[0]!.pid_start_ticks).toBe(9_007_199_254_742);
      expect(await pgSweeps.listRunningSessions(pg.sql, { afterId: "s-run-1", limit: 1 })).toEqual(liteSweeps.listRunningSessions(lite, { afterId: "s-run-1", limit: 1 }));
    });

    test("one session as a sweep sees it, whatever its status; null when it does not exist", async () => {
      for (const id of ["s-run-1", "s-old-1", "nope"]) expect(await pgSweeps.getSweepSession(pg.sql, id)).toEqual(liteSweeps.getSweepSession(lite, id));
      expect(await pgSweeps.getSweepSession(pg.sql, "nope")).toBeNull();
    });

    test("prune candidates: terminal, older than the cutoff, in id order after the last batch; and their count", async () => {
      const scope = { terminalStatuses: SESSION_TERMINAL_STATUSES, cutoff: CUTOFF };
      for (const page of [
        { afterId: null, limit: 10 },
        { afterId: null, limit: 2 },
        { afterId: "s-old-1", limit: 10 },
      ]) {
        expect(await pgSweeps.listPruneCandidates(pg.sql, { ...scope, ...page })).toEqual(liteSweeps.listPruneCandidates(lite, { ...scope, ...page }));
      }
      expect(await pgSweeps.listPruneCandidates(pg.sql, { ...scope, afterId: null, limit: 10 })).toEqual(["s-old-1", "s-old-2", "s-old-3"]);
      expect(await pgSweeps.countPruneCandidates(pg.sql, scope)).toBe(3);
      expect(await pgSweeps.countPruneCandidates(pg.sql, scope)).toBe(liteSweeps.countPruneCandidates(lite, scope));
    });

    test("legs using a directory: the directory itself or inside it, never a sibling that shares its prefix (names with % and _)", async () => {
      const sorted = <T extends { id: string }>(rows: T[]) => [...rows].sort((a, b) => a.id.localeCompare(b.id));
      for (const dir of ["/runs/100%_dir", "/runs/100%_dir/", "/runs", "/elsewhere/x", "/runs/100%_dir/deep", "/none"]) {
        expect(sorted(await pgSweeps.legsUsingDirectory(pg.sql, dir))).toEqual(sorted(liteSweeps.legsUsingDirectory(lite, dir)));
      }
      expect(sorted(await pgSweeps.legsUsingDirectory(pg.sql, "/runs/100%_dir")).map((l) => l.id)).toEqual(["l-old-1", "l-old-3"]);
    });

    test("the in-lock re-check and the legs of a batch", async () => {
      for (const id of ["s-run-1", "s-run-2", "s-run-3", "nope"]) expect(await pgSweeps.readSweepGuard(pg.sql, id)).toEqual(liteSweeps.readSweepGuard(lite, id));
      expect(await pgSweeps.readSweepGuard(pg.sql, "s-run-2")).toEqual({ status: "running", currentLegId: "l-2a", heartbeatAt: 1_800_000_101.25 });
      const sorted = <T extends { id: string }>(rows: T[]) => [...rows].sort((a, b) => a.id.localeCompare(b.id));
      expect(sorted(await pgSweeps.legsOfSessions(pg.sql, ["s-old-1", "s-old-3", "nope"]))).toEqual(sorted(liteSweeps.legsOfSessions(lite, ["s-old-1", "s-old-3", "nope"])));
    });
  });

  test("legs using a directory in a database whose collation is linguistic (ICU): exactly the bytewise prefix rule, by index", async () => {
    const name = `icu_${process.pid}`;
    await asSuperuser((sql) => sql.unsafe(`CREATE DATABASE ${name} TEMPLATE template0 ENCODING 'UTF8' LOCALE 'C.utf8' LOCALE_PROVIDER icu ICU_LOCALE 'en'`));
    const pg = await pgLedgerClient({ name, url: postgresCluster().url(name) });
    try {
      // Under ICU 'en', "/runs/DIR/x" and "/runs/Dir0" sort inside ["/runs/dir/", "/runs/dir0"): a range in the
      // database's collation would take them for legs inside /runs/dir.
      const roots = ["/runs/dir", "/runs/dir/a", "/runs/dir/zz/ä", "/runs/DIR/x", "/runs/Dir0", "/runs/dir0", "/runs/dir-b", "/runs/dirt", "/runs/di"];
      await pg.sql.unsafe(
        `INSERT INTO legs (id, session_id, seq, run_id, state_root, artifact_root, command, started_at, status)
         SELECT 'l' || g, 's' || g, 1, 'r' || g, '/filler/' || g, '/filler/' || g || '/art', '[]', 0, 'completed' FROM generate_series(1, 20000) g`,
      );
      for (const [i, root] of roots.entries()) {
        await pg.sql.unsafe(`INSERT INTO legs (id, session_id, seq, run_id, state_root, artifact_root, command, started_at, status) VALUES ($1, $1, 1, $1, $2, $3, '[]', 0, 'completed')`, [
          `x${i}`,
          root,
          i % 2 ? `/elsewhere/${i}` : `${root}/art`,
        ]);
      }
      await pg.sql.unsafe("ANALYZE legs");
      const exact = (dir: string) => (root: string) => root === dir || root.startsWith(`${dir}/`);
      for (const dir of ["/runs/dir", "/runs/dir/zz", "/runs/DIR"]) {
        const found = (await pgSweeps.legsUsingDirectory(pg.sql, dir)).filter((l) => l.id.startsWith("x"));
        const expected = roots.flatMap((root, i) => (exact(dir)(root) || exact(dir)(i % 2 ? `/elsewhere/${i}` : `${root}/art`) ? [`x${i}`] : []));
        expect({ dir, ids: found.map((l) => l.id).sort() }).toEqual({ dir, ids: expected.sort() });
      }
      expect((await pgSweeps.legsUsingDirectory(pg.sql, "/runs/dir")).map((l) => l.state_root).sort()).toEqual(["/runs/dir", "/runs/dir/a", "/runs/dir/zz/ä"]);
      // And by index: the 20,000 other legs are not read.
      const plan = (await pg.sql.unsafe(
        `EXPLAIN SELECT id FROM legs WHERE state_root = $1 OR (state_root >= $2 AND state_root < $3) OR artifact_root = $1 OR (artifact_root >= $2 AND artifact_root < $3)`,
        ["/runs/dir", "/runs/dir/", "/runs/dir0"],
      )).map((r: Record<string, string>) => r["QUERY PLAN"]).join("\n");
      expect(plan).not.toContain("Seq Scan");
      expect(plan).toContain("legs_state_root_idx");
      expect(plan).toContain("legs_artifact_root_idx");
    } finally {
      await pg.close();
      await asSuperuser((sql) => sql.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
    }
  });

  test("every statement of a prune batch, in the prune's order, does on PostgreSQL what it does on SQLite", async () => {
    const pg = await pgLedgerClient(db);
    const lite = sqliteLedgerDb();
    try {
      await arrange(lite, pg, ROWS);
      const scope = { terminalStatuses: SESSION_TERMINAL_STATUSES, cutoff: CUTOFF };
      // A batch with a session that is not a candidate (recent), one that does not exist, and the three old ones.
      let ids = ["s-new-1", "s-old-1", "s-old-2", "s-old-3", "nope"];
      const seen: Array<[string, unknown]> = [];
      lite.run("BEGIN IMMEDIATE");
      await pg.sql.begin(async (tx) => {
        for (const statement of PRUNE_BATCH_STATEMENTS) {
          if (statement === "read_legs" || statement === "record_admin_event") continue;
          const onPg = await pgSweeps.pruneStatement(tx, statement as PruneSqlStatement, ids, scope);
          const onLite = liteSweeps.pruneStatement(lite, statement as PruneSqlStatement, ids, scope);
          const norm = (r: { changes: number; ids?: string[] }) => ({ changes: r.changes, ids: r.ids ? [...r.ids].sort() : undefined });
          expect({ statement, ...norm(onPg) }).toEqual({ statement, ...norm(onLite) });
          seen.push([statement, norm(onPg)]);
          // As the prune narrows its batch: to what is still prunable, then to what nobody is owed.
          if (statement === "reread_status") ids = onPg.ids!;
          if (statement === "find_owed") ids = ids.filter((id) => !onPg.ids!.includes(id));
        }
      });
      lite.run("COMMIT");
      // What is left: the running and recent sessions, their rows, and nothing that named the pruned ones.
      const left = async (sql: string) => (await pg.sql.unsafe(sql)).map((r: { id: string }) => r.id).sort();
      expect(await left("SELECT id FROM sessions")).toEqual(["s-new-1", "s-run-1", "s-run-2", "s-run-3"]);
      expect(await left("SELECT id FROM status_transitions")).toEqual(["t-3"]);
      expect(await left("SELECT id FROM legs")).toEqual(["l-1a", "l-1b", "l-1c", "l-2a"]);
      expect((await pg.sql.unsafe("SELECT session_id FROM plays WHERE id = 'p-1'"))[0].session_id).toBeNull();
      expect(Object.fromEntries(seen)).toMatchObject({
        lock_candidates: { changes: 4 },
        reread_status: { ids: ["s-old-1", "s-old-2", "s-old-3"] },
        delete_sessions: { changes: 3 },
        reread_survivors: { ids: [] },
      });
    } finally {
      await pg.close();
      lite.close();
    }
  });

  test("the batch's first statement locks every candidate without changing it: a guarded write on one waits for the commit", async () => {
    const pg = await pgLedgerClient(db);
    const writer = await connectPg(pg.target); // another process's pool on the same ledger
    try {
      await pg.sql.unsafe(`INSERT INTO sessions (id, status, created_at, updated_at) VALUES ('c-1', 'completed', ${OLD}, ${OLD}), ('c-2', 'failed', ${OLD}, ${OLD})`);
      const version = async () => (await pg.sql.unsafe("SELECT id, xmin::text AS xmin, updated_at FROM sessions ORDER BY id")).map((r: object) => ({ ...r }));
      const before = await version();
      const scope = { terminalStatuses: SESSION_TERMINAL_STATUSES, cutoff: CUTOFF };
      const reserved = await writer.sql.reserve();
      let writeDone = false;
      let writeResult: unknown;
      try {
        const writerPid = Number((await reserved.unsafe("SELECT pg_backend_pid() AS pid"))[0].pid);
        await pg.sql.begin(async (tx) => {
          const locked = await pgSweeps.pruneStatement(tx, "lock_candidates", ["c-2", "c-1"], scope);
          expect(locked.changes).toBe(2);
          // The guarded write's first read (readStatus is SELECT … FOR UPDATE), from the other connection.
          const write = (async () => {
            await reserved.unsafe("BEGIN");
            const [row] = await reserved.unsafe("SELECT status, updated_at FROM sessions WHERE id = 'c-1' FOR UPDATE");
            const changed = row ? (await reserved.unsafe("UPDATE sessions SET status = 'running', updated_at = $1 WHERE id = 'c-1' AND status IS NOT DISTINCT FROM $2", [RECENT, row.status])).count : 0;
            await reserved.unsafe("COMMIT");
            writeResult = { found: row !== undefined, changed };
            writeDone = true;
          })();
          // It waits on the batch's row lock — and is still waiting once we have seen it wait.
          await until("the guarded write to wait on the batch's lock", async () => {
            const [row] = await pg.sql.unsafe("SELECT wait_event_type FROM pg_stat_activity WHERE pid = $1", [writerPid]);
            return row?.wait_event_type === "Lock";
          });
          expect(writeDone).toBe(false);
          // The lock changed nothing: every row has the version it had (FOR UPDATE writes no new tuple).
          expect(await version()).toEqual(before);
          for (const statement of ["reread_status", "delete_transitions", "delete_sessions"] as const) await pgSweeps.pruneStatement(tx, statement, ["c-1", "c-2"], scope);
          expect(writeDone).toBe(false);
          void write;
        });
        // Committed: the write proceeds, and finds no row to reopen (nothing half applied).
        await until("the guarded write to finish after the batch committed", () => writeDone);
        expect(writeResult).toEqual({ found: false, changed: 0 });
        expect(await version()).toEqual([]);
      } finally {
        reserved.release();
      }
    } finally {
      await writer.close();
      await pg.close();
    }
  });
});
