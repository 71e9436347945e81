// Prune versus reopen on PostgreSQL (SPEC §12.5, §10, §14), with a real second connection: `li agent -r`
// resuming the branch of a session a prune batch is deleting. The batch's first statement locks every
// candidate row without changing it, so a resume that arrives while the batch is open waits on that row
// lock, finds its session gone once the batch commits, and starts a new session for the same branch; a
// resume that commits before the batch takes its lock wins, and the session keeps its row, history and
// associations. Whichever commits first, nothing is half-applied. (The SQLite twin is test/sweeps/prune.test.ts.)

import { expect, test } from "bun:test";
import type { Subprocess } from "bun";
import { prune } from "../../../src/sweeps/prune.ts";
import { PRUNE_BATCH_STATEMENTS } from "../../../src/ledger/rules/prune.ts";
import { li, LI_BINARY, liEnv } from "../../helpers/cli.ts";
import { fixture } from "../../helpers/fixtures.ts";
import { usePgTestLedgers, type PgTestLedger } from "../../helpers/pg-ledger.ts";
import { describePostgres, usePostgresDatabase } from "../../helpers/postgres.ts";
import { NeverHappens, until } from "../../helpers/until.ts";

const DAY = 86400;

describePostgres("prune versus reopen on PostgreSQL, with a real second connection", () => {
  const { open, spawned } = usePgTestLedgers(usePostgresDatabase());
  let t: PgTestLedger | undefined;

  const one = async <T>(query: string, ...params: unknown[]): Promise<T> => (await t!.raw.sql.unsafe(query, params as never[]))[0] as T;
  const count = async (query: string, ...params: unknown[]) => (await one<{ n: number }>(query, ...params)).n;

  /** A session recorded by a real `li agent` (one leg, its branch, its history), plus a play pointing at it, backdated 40 days. */
  async function oldSession(): Promise<{ sessionId: string; branchId: string }> {
    t = await open();
    const ran = await li(["agent", "--", "true"], { home: t.home, env: t.env });
    expect({ code: ran.code, stderr: ran.stderr }).toEqual({ code: 0, stderr: ran.stderr });
    const listed = JSON.parse((await li(["ls", "--json"], { home: t.home, env: t.env })).stdout) as { entities: { id: string; branch_id: string }[] };
    const { id: sessionId, branch_id: branchId } = listed.entities[0]!;
    await t.ledger.createEntity("play", { id: "p1", fields: { session_id: sessionId } });
    await t.raw.sql.unsafe("UPDATE sessions SET updated_at = updated_at - $1 WHERE id = $2", [40 * DAY, sessionId]);
    return { sessionId, branchId };
  }

  async function countsFor(sessionId: string) {
    const n = (table: string, column: string) => count(`SELECT count(*)::int AS n FROM ${table} WHERE ${column} = $1`, sessionId);
    return {
      session: await n("sessions", "id"),
      transitions: await count("SELECT count(*)::int AS n FROM status_transitions WHERE entity_type = 'session' AND entity_id = $1", sessionId),
      legs: await n("legs", "session_id"),
      branches: await n("branches", "session_id"),
      registrations: await n("terminal_callbacks", "session_id"),
    };
  }

  /** Backends of this database other than `except` that wait on a lock another backend holds. */
  const blockedBackends = () => count("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND cardinality(pg_blocking_pids(pid)) > 0");

  function resume(branchId: string, argv: string[]): Subprocess<"ignore", "pipe", "pipe"> {
    const proc = Bun.spawn([LI_BINARY, "agent", "-r", branchId, "--", ...argv], { env: liEnv(t!.home, t!.env), stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    spawned.push(proc);
    return proc;
  }

  const exited = (proc: Subprocess<"ignore", "pipe", "pipe">) => async () => {
    if (proc.exitCode === null) return false;
    throw new NeverHappens(`li agent -r exited ${proc.exitCode}: ${await new Response(proc.stderr).text()}`);
  };

  test("the batch's first statement locks every candidate row, in id order, without changing it", async () => {
    const { sessionId } = await oldSession();
    const rowsBefore = await t!.raw.sql.unsafe("SELECT * FROM sessions ORDER BY id");
    let lockedByOther: unknown[] = [];
    let rowsAfterLock: unknown[] = [];
    let xmaxSet = false;
    const summary = await prune.runOnce(t!.ledger, t!.ledger.now(), prune.validate({}), {
      hooks: {
        afterStatement: async (statement) => {
          if (statement !== "lock_candidates") return;
          rowsAfterLock = await t!.raw.sql.unsafe("SELECT * FROM sessions ORDER BY id");
          // Another connection cannot take the candidate's row lock: the batch holds it.
          const tried = await t!.raw.sql.begin(async (tx) => tx.unsafe("SELECT id FROM sessions WHERE id = $1 FOR UPDATE NOWAIT", [sessionId])).catch((e: unknown) => e);
          lockedByOther = [(tried as { errno?: string }).errno];
          // The row carries the batch's (uncommitted) locker in xmax, the mark of a row lock, not a new version.
          const [row] = await t!.raw.sql.unsafe("SELECT xmax::text <> '0' AS locked FROM sessions WHERE id = $1", [sessionId]);
          xmaxSet = row.locked;
        },
      },
    });
    expect(lockedByOther).toEqual(["55P03"]);
    expect(xmaxSet).toBe(true);
    expect(rowsAfterLock).toEqual(rowsBefore);
    expect(summary.sessions).toBe(1);
  });

  test("a resume that commits before the batch takes its lock wins: the session keeps its row, history and associations", async () => {
    const { sessionId, branchId } = await oldSession();
    const before = await countsFor(sessionId);
    let resumed: Subprocess<"ignore", "pipe", "pipe"> | null = null;
    const summary = await prune.runOnce(t!.ledger, t!.ledger.now(), prune.validate({}), {
      hooks: {
        beforeBatch: async (candidates) => {
          expect(candidates).toEqual([sessionId]);
          const proc = resume(branchId, [fixture("forever")]);
          resumed = proc;
          await until("the resume to reopen the session", async () => {
            await exited(proc)();
            const row = await one<{ status: string; legs: number }>("SELECT status, (SELECT count(*)::int FROM legs WHERE session_id = s.id) AS legs FROM sessions s WHERE id = $1", sessionId);
            return row.status === "running" && row.legs === 2;
          });
        },
      },
    });
    expect([summary.sessions, summary.skipped_reopened]).toEqual([0, 1]);
    expect(await countsFor(sessionId)).toEqual({ ...before, transitions: before.transitions + 1, legs: before.legs + 1 });
    expect((await one<{ session_id: string | null }>("SELECT session_id FROM plays WHERE id = 'p1'")).session_id).toBe(sessionId);
    expect((await one<{ session_id: string }>("SELECT session_id FROM branches WHERE id = $1", branchId)).session_id).toBe(sessionId);
    const killed = await li(["kill", sessionId], { home: t!.home, env: t!.env });
    expect(killed.code).toBe(0);
    expect(await resumed!.exited).not.toBe(null);
  });

  for (const pauseAfter of PRUNE_BATCH_STATEMENTS) {
    test(`a resume arriving while the batch is paused after ${pauseAfter} waits on the row lock: the prune applies whole and the resume starts a new session`, async () => {
      const { sessionId, branchId } = await oldSession();
      let proc: Subprocess<"ignore", "pipe", "pipe"> | null = null;
      let waited = false;
      const summary = await prune.runOnce(t!.ledger, t!.ledger.now(), prune.validate({}), {
        hooks: {
          afterStatement: async (statement) => {
            if (statement !== pauseAfter) return;
            const resumer = resume(branchId, ["true"]);
            proc = resumer;
            // The resume's own connection is blocked by the batch's locks while the batch is open.
            waited = await until("the resume to wait on the batch's lock", async () => (await exited(resumer)()) || (await blockedBackends()) === 1, { timeoutMs: 30_000 });
          },
        },
      });
      expect(waited).toBe(true);
      const resumer = proc as Subprocess<"ignore", "pipe", "pipe"> | null;
      if (!resumer) throw new Error(`the batch never ran ${pauseAfter}`);
      const code = await resumer.exited;
      expect({ code, stderr: await new Response(resumer.stderr).text() }).toEqual({ code: 0, stderr: expect.any(String) });
      expect(summary.sessions).toBe(1);
      // Nothing of the old session is left half-deleted, and its soft reference is nulled…
      expect(await countsFor(sessionId)).toEqual({ session: 0, transitions: 0, legs: 0, branches: 0, registrations: 0 });
      expect((await one<{ session_id: string | null }>("SELECT session_id FROM plays WHERE id = 'p1'")).session_id).toBeNull();
      // …and the resume is recorded under a new session, on the same branch.
      const branch = await one<{ session_id: string }>("SELECT session_id FROM branches WHERE id = $1", branchId);
      expect(branch.session_id).not.toBe(sessionId);
      expect(await countsFor(branch.session_id)).toMatchObject({ session: 1, legs: 1, branches: 1 });
      expect((await one<{ status: string }>("SELECT status FROM sessions WHERE id = $1", branch.session_id)).status).toBe("completed");
    });
  }
});
