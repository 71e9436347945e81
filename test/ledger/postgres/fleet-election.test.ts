// The fleet's election on one PostgreSQL ledger (SPEC §14 "Many hosts", issue 29 item 1): the sweeps one
// runner does for the whole fleet (burying expired claims, re-queuing expired leases, cron fires, the
// prune) run on one elected watcher, which holds an advisory lock on its host lock's session. Its death
// frees the lock, and another watcher takes the sweeps within its fleet lease.

import { expect, test } from "bun:test";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { LOCK_NAMESPACE } from "../../../src/ledger/postgres/migrate.ts";
import { fleetLockKey } from "../../../src/ledger/postgres/watch-lock.ts";
import type { WatcherLock } from "../../../src/ledger/watcher-lock.ts";
import { LI_BINARY, liEnv } from "../../helpers/cli.ts";
import { collectLines, type CollectedLines } from "../../helpers/lines.ts";
import { usePgTestLedgers, type PgTestLedger } from "../../helpers/pg-ledger.ts";
import { describePostgres, usePostgresDatabase } from "../../helpers/postgres.ts";
import { NeverHappens, until } from "../../helpers/until.ts";

describePostgres("the fleet's election on one PostgreSQL ledger (§14 Many hosts)", () => {
  const { open, spawned } = usePgTestLedgers(usePostgresDatabase());

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
      await t.raw.sql`SELECT pg_terminate_backend(${pid}, 5000)`;
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
});
