// The fleet's election on one PostgreSQL ledger (SPEC §14 "Many hosts", issue 29 item 1): the sweeps one
// runner does for the whole fleet (burying expired claims, re-queuing expired leases, cron fires, the
// prune) run on one elected watcher, which holds an advisory lock on its host lock's session. Its death
// frees the lock, and another watcher takes the sweeps within its fleet lease.

import { expect, test } from "bun:test";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { closedConnections, connectPg } from "../../../src/ledger/postgres/client.ts";
import { resolvePgTarget } from "../../../src/ledger/postgres/options.ts";
import { LOCK_NAMESPACE } from "../../../src/ledger/postgres/migrate.ts";
import { fleetLockKey, holdPgWatcherLock } from "../../../src/ledger/postgres/watch-lock.ts";
import type { WatcherLock } from "../../../src/ledger/watcher-lock.ts";
import { LI_BINARY, liEnv } from "../../helpers/cli.ts";
import { collectLines, type CollectedLines } from "../../helpers/lines.ts";
import { usePgTestLedgers, type PgTestLedger } from "../../helpers/pg-ledger.ts";
import { describePostgres, statementStatistics, usePostgresDatabase } from "../../helpers/postgres.ts";
import { NeverHappens, until } from "../../helpers/until.ts";

describePostgres(
  "the fleet's election on one PostgreSQL ledger (§14 Many hosts)",
  () => {
  const db = usePostgresDatabase();
  const { open, spawned } = usePgTestLedgers(db);

  test("a watcher's per-pass lock check asks the server nothing while its connections live; after its lock's connection drops it asks, and takes the lock again", async () => {
    const t = await open();
    await t.raw.sql`CREATE EXTENSION IF NOT EXISTS pg_stat_statements`;
    const role = `fl_${process.pid}`;
    for (const statement of [`DROP ROLE IF EXISTS ${role}`, `CREATE ROLE ${role} LOGIN`, `GRANT CONNECT ON DATABASE "${db.name}" TO ${role}`]) await t.raw.sql.unsafe(statement);
    const client = await connectPg(resolvePgTarget(t.url.replace("postgres@", `${role}@`)));
    try {
      const lock = await holdPgWatcherLock(async () => client.sql, t.schema, "host-quiet", client.name);
      /** The role's statements that read pg_locks (the old per-pass check) and that took the lock. */
      const calls = async (like: string) => {
        const [row] = await t.raw.sql`
          SELECT COALESCE(sum(s.calls), 0)::int AS n FROM pg_stat_statements s JOIN pg_catalog.pg_roles r ON r.oid = s.userid
          WHERE r.rolname = ${role} AND s.query ILIKE ${like}`;
        return row.n as number;
      };
      const lockQueries = () => calls("%pg_locks%");
      const takes = () => calls("%pg_try_advisory_lock%");
      for (let i = 0; i < 20; i++) await lock.ensureHeld();
      expect(await lockQueries()).toBe(0);
      // Its session is ended (what a dropped connection is to the server): the close is heard, the next check asks and takes the lock again.
      const [holder] = await t.raw.sql`SELECT pid FROM pg_catalog.pg_stat_activity WHERE usename = ${role} AND query ILIKE '%pg_try_advisory_lock%'`;
      const closed = closedConnections();
      await t.raw.sql`SELECT pg_terminate_backend(${holder.pid}, 5000)`;
      await until("the lock's connection closed", () => closedConnections() > closed);
      expect(await takes()).toBe(1);
      await lock.ensureHeld();
      // Its old connection could not answer; the lock was taken again on a new session.
      expect(await takes()).toBe(2);
      const held = await t.raw.sql`
        SELECT l.pid FROM pg_catalog.pg_locks l JOIN pg_catalog.pg_stat_activity a ON a.pid = l.pid
        WHERE l.locktype = 'advisory' AND l.granted AND a.usename = ${role}`;
      expect(held.map((r: { pid: number }) => r.pid)).toEqual([expect.any(Number)]);
      expect(held[0].pid).not.toBe(holder.pid);
      for (let i = 0; i < 20; i++) await lock.ensureHeld();
      expect({ pg_locks: await lockQueries(), takes: await takes() }).toEqual({ pg_locks: 0, takes: 2 });
      await lock.release();
    } finally {
      await client.close();
    }
  }, { timeout: 120_000 });

  /** The server sessions holding the fleet's election lock right now. */
  async function electedSessions(t: PgTestLedger): Promise<number[]> {
    const rows = await t.raw.sql`
      SELECT pid FROM pg_catalog.pg_locks WHERE locktype = 'advisory' AND granted
        AND classid = ${LOCK_NAMESPACE}::int::oid AND objid = hashtext(${fleetLockKey(t.schema)})::oid AND objsubid = 2`;
    return rows.map((r: { pid: number }) => Number(r.pid));
  }

  test("overlapping elections: exactly one of three watchers leads, and keeps leading; its session's death hands the election to another", async () => {
    const t = await open();
    const locks: WatcherLock[] = [];
    for (const host of ["host-a", "host-b", "host-c"]) locks.push(await t.open().backend.lockWatcher(host));
    try {
      const round = async () => {
        // Every watcher's pass at once: its check, then its try at the election.
        await Promise.all(locks.map((l) => l.ensureHeld()));
        return Promise.all(locks.map((l) => l.lead!()));
      };
      const first = await round();
      expect(first.filter(Boolean)).toHaveLength(1);
      const leader = first.indexOf(true);
      for (let i = 0; i < 10; i++) expect(await round()).toEqual(first);
      expect(await electedSessions(t)).toHaveLength(1);

      // The leader's session dies (what a kill -9 or a dropped connection does to it on the server).
      const [pid] = await electedSessions(t);
      const closed = closedConnections();
      await t.raw.sql`SELECT pg_terminate_backend(${pid}, 5000)`;
      // The leader learns it from its connection's close (it asks the server about its lock only then).
      await until("the leader's connection closed", () => closedConnections() > closed);
      const after = await round();
      expect(after.filter(Boolean)).toHaveLength(1);
      // Whoever won, the election is held by exactly one live session, and the old leader knows whether it still leads.
      expect(await electedSessions(t)).toHaveLength(1);
      expect(await electedSessions(t)).not.toEqual([pid]);
      for (let i = 0; i < 5; i++) expect(await round()).toEqual(after);
      // Released: the election goes with the host lock, and a remaining watcher takes it.
      const now = after.indexOf(true);
      await locks[now]!.release();
      const rest = locks.filter((_, i) => i !== now);
      const next = await Promise.all(rest.map(async (l) => (await l.ensureHeld(), l.lead!())));
      expect(next.filter(Boolean)).toHaveLength(1);
      expect(leader).toBeGreaterThanOrEqual(0);
    } finally {
      for (const l of locks) await l.release();
    }
  });

  test("killing the elected li watch: another takes the fleet-wide sweeps within its lease; one leader at a time", async () => {
    const t = await open();
    const LEASE_SECONDS = 2;
    const watchers: { host: string; proc: Subprocess<"ignore", "pipe", "pipe">; out: CollectedLines }[] = [];
    for (const host of ["host-a", "host-b", "host-c"]) {
      const proc = Bun.spawn([LI_BINARY, "watch", "--log-format", "json", "--sweep-interval", "1h", "--fleet-lease", `${LEASE_SECONDS}s`], {
        env: liEnv(join(t.home, host), { ...t.env, LI_HOST_ID: host, LI_HOST_NAME: host }),
        stdin: "ignore",
        stdout: "pipe",
        stderr: "pipe",
      });
      spawned.push(proc);
      watchers.push({ host, proc, out: collectLines(proc.stdout) });
    }
    const elected = (w: (typeof watchers)[number]) => w.out.lines.filter((l) => l.includes('"action":"fleet_elected"')).length;
    const alive = async (w: (typeof watchers)[number]) => {
      if (w.proc.exitCode !== null) throw new NeverHappens(`${w.host}'s watcher exited ${w.proc.exitCode}: ${await new Response(w.proc.stderr).text()}`);
    };
    await until("one watcher elected", async () => {
      for (const w of watchers) await alive(w);
      return watchers.some((w) => elected(w) > 0);
    }, { timeoutMs: 60_000 });
    // Every watcher has run passes meanwhile (each logged its start and tries the election every lease):
    // two lease periods of overlapping passes, and still one leader.
    await until("every watcher started", () => watchers.every((w) => w.out.lines.some((l) => l.includes('"action":"start"'))), { timeoutMs: 60_000 });
    const since = performance.now();
    await until("two leases of overlapping passes", () => performance.now() - since > 2 * LEASE_SECONDS * 1000, { timeoutMs: 60_000 });
    expect(watchers.filter((w) => elected(w) > 0)).toHaveLength(1);
    expect(await electedSessions(t)).toHaveLength(1);

    const leader = watchers.find((w) => elected(w) > 0)!;
    leader.proc.kill("SIGKILL");
    await leader.proc.exited;
    const killedAt = performance.now();
    const rest = watchers.filter((w) => w !== leader);
    await until("another watcher elected", async () => {
      for (const w of rest) await alive(w);
      return rest.some((w) => elected(w) > 0);
    }, { timeoutMs: 60_000 });
    const tookMs = performance.now() - killedAt;
    // Within its lease (a follower tries once per lease), with a generous margin for a loaded machine.
    expect(tookMs).toBeLessThan(LEASE_SECONDS * 1000 + 15_000);
    expect(rest.filter((w) => elected(w) > 0)).toHaveLength(1);
    expect(await electedSessions(t)).toHaveLength(1);
    for (const w of rest) w.proc.kill("SIGTERM");
    expect(await Promise.all(rest.map((w) => w.proc.exited))).toEqual([0, 0]);
  });
  },
  [statementStatistics],
);
