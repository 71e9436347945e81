// Twenty hosts on one PostgreSQL ledger without a herd (SPEC §14 "Many hosts", issue 29 item 1): a commit
// wakes only the watcher that has work for it. Each watcher logs in as its own role, and the test's own
// server counts every role's statements (pg_stat_statements): a leg on host A makes A's watcher look, and
// the other nineteen run no statement for it; a delivery owed to host B's handler is made by B, once.

import { expect, test } from "bun:test";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { addHandler } from "../../../src/notify/consumers.ts";
import { LI_BINARY, li, liEnv } from "../../helpers/cli.ts";
import { collectLines, type CollectedLines } from "../../helpers/lines.ts";
import { usePgTestLedgers, type PgTestLedger } from "../../helpers/pg-ledger.ts";
import { describePostgres, statementStatistics, usePostgresDatabase } from "../../helpers/postgres.ts";
import { NeverHappens, until } from "../../helpers/until.ts";
import { complete, RECORD, recorded, runningSession } from "../../notify/helpers.ts";

const WATCHERS = 20;

describePostgres(
  "twenty watchers on one PostgreSQL ledger: a commit wakes only the host it concerns (§14 Many hosts)",
  () => {
    const db = usePostgresDatabase();
    const { open, spawned } = usePgTestLedgers(db);

    interface Watcher {
      host: string;
      role: string;
      home: string;
      proc: Subprocess<"ignore", "pipe", "pipe">;
      out: CollectedLines;
    }

    /** A login role with what li's watcher needs on the ledger's schema (its rows; no DDL). */
    async function watcherRole(t: PgTestLedger, n: number): Promise<string> {
      const role = `fw_${process.pid}_${n}`;
      for (const statement of [
        `DROP ROLE IF EXISTS ${role}`,
        `CREATE ROLE ${role} LOGIN`,
        `GRANT CONNECT ON DATABASE "${db.name}" TO ${role}`,
        `GRANT USAGE ON SCHEMA "${t.schema}" TO ${role}`,
        `GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA "${t.schema}" TO ${role}`,
        `GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA "${t.schema}" TO ${role}`,
      ]) {
        await t.raw.sql.unsafe(statement);
      }
      return role;
    }

    /** Statements each role ran in this database so far (pg_stat_statements' calls), by role. */
    async function statementsByRole(t: PgTestLedger, roles: readonly string[]): Promise<Map<string, number>> {
      const rows = await t.raw.sql`
        SELECT r.rolname AS role, COALESCE(sum(s.calls), 0)::bigint AS calls
        FROM pg_catalog.pg_roles r
        LEFT JOIN pg_stat_statements s ON s.userid = r.oid AND s.dbid = (SELECT oid FROM pg_catalog.pg_database WHERE datname = current_database())
        WHERE r.rolname = ANY(${roles}::text[]) GROUP BY r.rolname`;
      return new Map(rows.map((r: { role: string; calls: string | number }) => [r.role, Number(r.calls)]));
    }

    const deltas = (before: Map<string, number>, after: Map<string, number>, watchers: readonly Watcher[]) =>
      Object.fromEntries(watchers.map((w) => [w.host, (after.get(w.role) ?? 0) - (before.get(w.role) ?? 0)]));

    /** Waits until no watcher's count moves across two samples: every start-up pass is over. */
    async function quiet(t: PgTestLedger, watchers: readonly Watcher[]): Promise<Map<string, number>> {
      const roles = watchers.map((w) => w.role);
      let last = await statementsByRole(t, roles);
      let stillSince = performance.now();
      return until(
        "every watcher idle",
        async () => {
          for (const w of watchers) if (w.proc.exitCode !== null) throw new NeverHappens(`${w.host}'s watcher exited ${w.proc.exitCode}: ${await new Response(w.proc.stderr).text()}`);
          const now = await statementsByRole(t, roles);
          if (roles.some((r) => now.get(r) !== last.get(r))) {
            last = now;
            stillSince = performance.now();
            return false;
          }
          return performance.now() - stillSince > 1500 ? now : false;
        },
        { timeoutMs: 120_000, intervalMs: 250 },
      );
    }

    test("a leg on host A wakes A's watcher only; a delivery owed to host B's handler is made by B only, once", async () => {
      const t = await open();
      await t.raw.sql`CREATE EXTENSION IF NOT EXISTS pg_stat_statements`;
      const watchers: Watcher[] = [];
      for (let i = 0; i < WATCHERS; i++) {
        const host = `host-${String.fromCharCode(97 + i)}`;
        const role = await watcherRole(t, i);
        const home = join(t.home, host);
        // Every timed pass an hour away: what a watcher runs here, a commit woke it for.
        const proc = Bun.spawn([LI_BINARY, "watch", "--log-format", "json", "--sweep-interval", "1h", "--fleet-lease", "1h", "--poll", "1h"], {
          env: liEnv(home, { LI_DB: t.url.replace("postgres@", `${role}@`), LI_HOST_ID: host, LI_HOST_NAME: host }),
          stdin: "ignore",
          stdout: "pipe",
          stderr: "pipe",
        });
        spawned.push(proc);
        watchers.push({ host, role, home, proc, out: collectLines(proc.stdout) });
      }
      await until("every watcher started and listening", () => watchers.every((w) => w.out.lines.some((l) => l.includes('"action":"start"') && l.includes('"wake":"listen"'))), { timeoutMs: 120_000 });
      const [a, b] = watchers as [Watcher, Watcher];
      const others = (...but: Watcher[]) => watchers.filter((w) => !but.includes(w));

      // A leg on host A with its own notice (--notify: a handler of host A).
      const outA = join(t.home, "a.log");
      let before = await quiet(t, watchers);
      const leg = await li(["agent", "--notify", `${RECORD} ${outA}`, "--", "true"], { home: a.home, env: { ...t.env, LI_HOST_ID: a.host, LI_HOST_NAME: a.host } });
      expect(leg.code).toBe(0);
      await until("host A's notice delivered", () => recorded(outA).length === 1, { timeoutMs: 60_000 });
      let after = await quiet(t, watchers);
      let moved = deltas(before, after, watchers);
      expect(moved[a.host]).toBeGreaterThan(0);
      expect(Object.fromEntries(others(a).map((w) => [w.host, moved[w.host]]))).toEqual(Object.fromEntries(others(a).map((w) => [w.host, 0])));

      // A standing handler of host B, owed every session's end: the next leg on A owes B a delivery.
      const outB = join(t.home, "b.log");
      await addHandler(t.ledger, { name: "rec-b", argv: [RECORD, outB], kinds: ["session"], ids: [], hostId: b.host });
      before = await quiet(t, watchers);
      const second = await li(["agent", "--json", "--notify", `${RECORD} ${outA}`, "--", "true"], { home: a.home, env: { ...t.env, LI_HOST_ID: a.host, LI_HOST_NAME: a.host } });
      expect(second.code).toBe(0);
      const sessionId = JSON.parse(second.stdout).session_id as string;
      await until("both notices delivered", () => recorded(outA).length === 2 && recorded(outB).length === 1, { timeoutMs: 60_000 });
      after = await quiet(t, watchers);
      moved = deltas(before, after, watchers);
      expect(moved[a.host]).toBeGreaterThan(0);
      expect(moved[b.host]).toBeGreaterThan(0);
      expect(Object.fromEntries(others(a, b).map((w) => [w.host, moved[w.host]]))).toEqual(Object.fromEntries(others(a, b).map((w) => [w.host, 0])));
      // B's handler ran once, for that session, under B's watcher (the only one that claims host B's handlers), on its first attempt.
      expect(recorded(outB)).toEqual([expect.stringContaining(` session ${sessionId}`)]);
      const rows = await t.raw.sql`SELECT d.state, d.attempts FROM terminal_deliveries d JOIN terminal_callbacks c ON c.consumer = d.consumer WHERE c.name = 'rec-b'`;
      expect(rows.map((r: { state: string; attempts: number }) => `${r.state} ${r.attempts}`)).toEqual(["acked 1"]);
      expect(b.out.lines.filter((l) => l.includes('"action":"deliver"'))).toHaveLength(1);
      for (const w of others(b)) expect(w.out.lines.filter((l) => l.includes('"action":"deliver"') && l.includes("rec-b"))).toEqual([]);

      for (const w of watchers) w.proc.kill("SIGTERM");
      expect(new Set(await Promise.all(watchers.map((w) => w.proc.exited)))).toEqual(new Set([0]));
    });

    test("a run waiting --after a session moves on when that session ends: the end wakes the fleet, not the poll", async () => {
      const t = await open();
      const home = join(t.home, "host-deps");
      const env = { ...t.env, LI_HOST_ID: "host-deps", LI_HOST_NAME: "host-deps" };
      const proc = Bun.spawn([LI_BINARY, "watch", "--log-format", "json", "--sweep-interval", "1h", "--fleet-lease", "1h", "--poll", "1h"], {
        env: liEnv(home, env),
        stdin: "ignore",
        stdout: "pipe",
        stderr: "pipe",
      });
      spawned.push(proc);
      const out = collectLines(proc.stdout);
      await until("the watcher started", () => out.lines.some((l) => l.includes('"action":"start"')), { timeoutMs: 60_000 });
      await runningSession(t.ledger, "dep-session");
      const submitted = await li(["agent", "--detach", "--queue", "deps", "--after", "dep-session", "--", "true"], { home, env });
      expect(submitted.code).toBe(0);
      const runId = submitted.stdout.trim();
      const status = async () => ((await t.raw.sql`SELECT status FROM schedule_runs WHERE id = ${runId}`)[0]?.status as string | undefined) ?? null;
      await until("the run waits for its dependency", async () => (await status()) === "waiting_dependency", { timeoutMs: 60_000 });
      expect((await t.ledger.transition("session", "dep-session", complete())).result).toBe("applied");
      await until("the run ran once its dependency ended", async () => {
        if (proc.exitCode !== null) throw new NeverHappens(`the watcher exited ${proc.exitCode}: ${await new Response(proc.stderr).text()}`);
        return (await status()) === "completed";
      }, { timeoutMs: 60_000 });
      proc.kill("SIGTERM");
      expect(await proc.exited).toBe(0);
    });
  },
  [statementStatistics],
);
