// The sweeps' statements on PostgreSQL (SPEC §12): each read answers as SQLite's does on the same rows.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Database } from "bun:sqlite";
import type { PgClient } from "../../../src/ledger/postgres/client.ts";
import * as pgSweeps from "../../../src/ledger/postgres/sweeps.ts";
import * as liteSweeps from "../../../src/ledger/sqlite/sweeps.ts";
import { SESSION_TERMINAL_STATUSES } from "../../../src/lifecycle/policy.ts";
import { describePostgres, usePostgresDatabase } from "../../helpers/postgres.ts";
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
});
