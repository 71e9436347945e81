// Wake-ups and the watcher lock on a PostgreSQL ledger (SPEC §14, issue 11 items 5 and 6): the
// triggers NOTIFY at commit (never for a rollback, never across schemas), the LISTEN wake moves on
// every notice and on every (re)subscription after a server restart, the kill-request listener hears
// only its leg, and the per-host advisory lock admits one watcher per host and notices when it is lost.

import { afterAll, expect, test } from "bun:test";
import type { SQL } from "bun";
import { connectPg, type PgClient } from "../../../src/ledger/postgres/client.ts";
import { migratePg } from "../../../src/ledger/postgres/migrate.ts";
import { resolvePgTarget } from "../../../src/ledger/postgres/options.ts";
import { listenForChanges, listenForKillRequest, noticeFor } from "../../../src/ledger/postgres/wake.ts";
import { holdPgWatcherLock } from "../../../src/ledger/postgres/watch-lock.ts";
import { LockHeldError, WatcherLockLostError, type WatcherLock } from "../../../src/ledger/watcher-lock.ts";
import { asSuperuser, describePostgres, restartPostgresServer, usePostgresDatabase } from "../../helpers/postgres.ts";
import { startTcpProxy } from "../../helpers/tcp-proxy.ts";
import { until } from "../../helpers/until.ts";

let schemaCounter = 0;
const freshSchema = () => `w${process.pid}_${++schemaCounter}`;

describePostgres("wake-ups and the watcher lock on PostgreSQL (§14)", () => {
  const db = usePostgresDatabase();
  const clients: PgClient[] = [];
  afterAll(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
  });
  /** A migrated ledger in its own schema of this file's database. */
  const ledger = async (schema = freshSchema()) => {
    const client = await connectPg(resolvePgTarget(`${db.url}&search_path=${schema}`));
    clients.push(client);
    await migratePg(client);
    return client;
  };
  let seq = 0;
  const insertTransition = (sql: SQL) =>
    sql.unsafe(
      `INSERT INTO status_transitions (id, seq, entity_type, entity_id, previous_status, status, reason_code, source, created_at)
       VALUES ($1, $2, 'session', 's1', 'running', 'completed', 'run.completed', 'agent', 1)`,
      [`t${++seq}`, seq],
    );
  const insertLeg = (sql: SQL, id: string) =>
    sql.unsafe(
      `INSERT INTO legs (id, session_id, seq, run_id, state_root, artifact_root, command, started_at, status)
       VALUES ($1, 's1', $2, $1, '/s', '/a', '[]', 1, 'running')`,
      [id, ++seq],
    );

  test("a notice names its schema; another schema's notice is not ours", () => {
    expect(noticeFor("li:42", "li")).toBe("42");
    expect(noticeFor("li:", "li")).toBe("");
    expect(noticeFor("li2:42", "li")).toBeNull();
    expect(noticeFor("l:42", "li")).toBeNull();
  });

  test("a committed history row wakes a listener of its schema once the LISTEN is up; a rollback and another schema's commit do not", async () => {
    const mine = await ledger();
    const other = await ledger();
    const wake = listenForChanges(mine.sql, mine.target.schema);
    // A listener of a schema nobody uses: its notice, sent in the same transaction as the other schema's
    // commit, arrives after that commit's notice, so once it is in, ours would have been too.
    const sentinel = listenForChanges(other.sql, "sentinel");
    try {
      // The acknowledgement of the LISTEN is a wake-up of its own (the caller re-checks after arming).
      await until("the LISTENs to be acknowledged", () => wake.watching && wake.generation > 0 && sentinel.watching);
      const armed = wake.generation;
      const sentinelArmed = sentinel.generation;
      await mine.sql.begin(async (tx) => {
        await insertTransition(tx);
        throw new Error("roll back");
      }).catch(() => {});
      await other.sql.begin(async (tx) => {
        await insertTransition(tx);
        await tx`SELECT pg_notify('li_changes', 'sentinel:')`;
      });
      await until("the sentinel's notice", () => sentinel.generation > sentinelArmed);
      expect(wake.generation).toBe(armed);
      await insertTransition(mine.sql);
      await wake.changed(armed, 20_000);
      expect(wake.generation).toBe(armed + 1);
    } finally {
      wake.close();
      sentinel.close();
    }
  });

  test("a registration (a callback, a consumer) wakes the listener: it can make a recorded event owed", async () => {
    const client = await ledger();
    const wake = listenForChanges(client.sql, client.target.schema);
    try {
      await until("the LISTEN to be acknowledged", () => wake.watching && wake.generation > 0);
      let seen = wake.generation;
      await client.sql.unsafe(
        `INSERT INTO terminal_callbacks (id, scope, consumer, argv, origin, host_id, created_at) VALUES ('c1', 'standing', 'handler:x', '[]', 'cli', 'h', 1)`,
      );
      await wake.changed(seen, 20_000);
      expect(wake.generation).toBeGreaterThan(seen);
      seen = wake.generation;
      await client.sql.unsafe(`INSERT INTO consumers (name, watermark, registered_at) VALUES ('ops', 0, 1)`);
      await wake.changed(seen, 20_000);
      expect(wake.generation).toBeGreaterThan(seen);
    } finally {
      wake.close();
    }
  });

  test("a kill request reaches the listener of its leg only, and each (re)subscription asks the leg to look", async () => {
    const client = await ledger();
    await insertLeg(client.sql, "leg-a");
    await insertLeg(client.sql, "leg-b");
    const calls: string[] = [];
    const stopA = listenForKillRequest(client.sql, client.target.schema, "leg-a", () => calls.push("a"));
    const stopB = listenForKillRequest(client.sql, client.target.schema, "leg-b", () => calls.push("b"));
    try {
      await until("both subscriptions", () => calls.length === 2);
      await client.sql`UPDATE legs SET kill_requested_at = 5 WHERE id = 'leg-a'`;
      await until("leg-a's kill notice", () => calls.filter((c) => c === "a").length === 2);
      // Setting the same request again changes nothing and says nothing; leg-b heard none of it.
      await client.sql`UPDATE legs SET kill_requested_at = 5 WHERE id = 'leg-a'`;
      await client.sql`UPDATE legs SET kill_requested_at = 6 WHERE id = 'leg-b'`;
      await until("leg-b's kill notice", () => calls.filter((c) => c === "b").length === 2);
      expect(calls.filter((c) => c === "a")).toHaveLength(2);
    } finally {
      stopA();
      stopB();
    }
  });

  test("after a server restart the LISTEN is back, and the reconnect itself is a wake-up: a commit made while it was down is re-queried", async () => {
    const owner = await ledger();
    await insertLeg(owner.sql, "leg-r");
    // The listener logs in as a role of its own, which the test can keep out for a while (a superuser cannot be).
    const role = `lw_${crypto.randomUUID().replace(/-/g, "").slice(0, 12)}`;
    await asSuperuser((sql) => sql.unsafe(`CREATE ROLE ${role} LOGIN`));
    const client = await connectPg(resolvePgTarget(db.url.replace("postgres@", `${role}@`) + `&search_path=${owner.target.schema}`));
    clients.push(client);
    const wake = listenForChanges(client.sql, client.target.schema);
    const kills: number[] = [];
    const stopKill = listenForKillRequest(client.sql, client.target.schema, "leg-r", () => kills.push(Date.now()));
    try {
      await until("the LISTEN to be acknowledged", () => wake.watching && wake.generation > 0 && kills.length === 1);
      const before = wake.generation;
      // The listener's role may not log in while the server is down and for a moment after: the commits
      // below certainly happen while it is disconnected, and only the re-subscription can tell it.
      await asSuperuser((sql) => sql.unsafe(`ALTER ROLE ${role} NOLOGIN`));
      let allowedAgain = false;
      try {
        await restartPostgresServer();
        await asSuperuser(async (sql) => {
          await sql.unsafe(`SET search_path TO ${client.target.schema}`);
          await insertTransition(sql);
          await sql`UPDATE legs SET kill_requested_at = 9 WHERE id = 'leg-r'`;
        }, db.name);
        expect(wake.generation).toBe(before);
        expect(kills).toHaveLength(1);
        await asSuperuser((sql) => sql.unsafe(`ALTER ROLE ${role} LOGIN`));
        allowedAgain = true;
      } finally {
        if (!allowedAgain) await asSuperuser((sql) => sql.unsafe(`ALTER ROLE ${role} LOGIN`));
      }
      await wake.changed(before, 30_000);
      expect(wake.generation).toBeGreaterThan(before);
      await until("the kill listener's re-subscription", () => kills.length === 2, { timeoutMs: 30_000 });
      // And it hears new commits again.
      const back = wake.generation;
      await insertTransition(owner.sql);
      await wake.changed(back, 20_000);
      expect(wake.generation).toBeGreaterThan(back);
    } finally {
      wake.close();
      stopKill();
    }
  });

  test("one watcher per host: a second on the same host id is refused, another host id runs beside it, a released lock is free", async () => {
    const client = await ledger();
    const schema = client.target.schema;
    const a = await holdPgWatcherLock(async () => client.sql, schema, "host-a", client.name);
    expect(a.path).toContain("host-a");
    expect(a.path).not.toContain("@");
    const refused = await holdPgWatcherLock(async () => client.sql, schema, "host-a", client.name).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(LockHeldError);
    const b = await holdPgWatcherLock(async () => client.sql, schema, "host-b", client.name);
    // The same host id on another schema is another ledger.
    const elsewhere = await ledger();
    const c = await holdPgWatcherLock(async () => elsewhere.sql, elsewhere.target.schema, "host-a", elsewhere.name);
    await a.ensureHeld();
    await a.release();
    const again = await holdPgWatcherLock(async () => client.sql, schema, "host-a", client.name);
    await Promise.all([again.release(), b.release(), c.release()]);
  });

  test("a lock whose pool was replaced (closed after a call outlived its deadline) is taken again on the new pool, not tried on the closed one", async () => {
    const schema = freshSchema();
    const first = await ledger(schema);
    let current = first;
    const lock = await holdPgWatcherLock(async () => current.sql, schema, "host-p", first.name);
    await first.sql.close({ timeout: 0 }); // as a call past its deadline drops the pool (connection.ts)
    current = await ledger(schema);
    await lock.ensureHeld();
    // Held by the new pool's session: another watcher of this host is refused.
    const refused = await holdPgWatcherLock(async () => current.sql, schema, "host-p", current.name).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(LockHeldError);
    await lock.release();
  });

  /**
   * A watcher lock of `hostId` held through a loopback proxy, whose link is then severed after a partition
   * that outlasted TCP: our side of the lock's connection is gone, the server's session (the ghost) lives on
   * holding the lock. `body` gets the lock, its holders' pids as the server sees them, and the ghost's.
   */
  const severedLock = async (hostId: string, body: (it: { lock: WatcherLock; holders: () => Promise<number[]>; ghost: number; tryAnother: () => Promise<unknown> }) => Promise<void>) => {
    const schema = freshSchema();
    await ledger(schema);
    const target = new URL(db.url);
    const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port) });
    try {
      const client = await connectPg(resolvePgTarget(`${proxy.via(db.url)}&search_path=${schema}`));
      clients.push(client);
      const lock = await holdPgWatcherLock(async () => client.sql, schema, hostId, client.name);
      const holders = () =>
        asSuperuser(async (sql) => (await sql`SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND objid = hashtext(${`${schema}:watch:${hostId}`})::oid`).map((r: { pid: number }) => r.pid));
      const [ghost] = await holders();
      proxy.sever();
      expect(await holders()).toEqual([ghost!]);
      const tryAnother = () => holdPgWatcherLock(async () => client.sql, schema, hostId, client.name).catch((e: unknown) => e);
      await body({ lock, holders, ghost: ghost!, tryAnother });
    } finally {
      proxy.close();
    }
  };

  test("a lock the server still keeps for a session whose link was severed (a partition that outlasted TCP) is taken back: that exact session is ended, the lock held anew", async () => {
    await severedLock("host-g", async ({ lock, holders, ghost, tryAnother }) => {
      await lock.ensureHeld();
      const [now] = await holders();
      expect(now).not.toBe(ghost);
      expect(await asSuperuser(async (sql) => (await sql`SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = ${ghost}`)[0].n)).toBe(0);
      // Held for real: another watcher of this host is refused.
      expect(await tryAnother()).toBeInstanceOf(LockHeldError);
      await lock.release();
    });
  });

  test("a check given up at its deadline and still running when the next pass checks is joined, not raced: the lock is taken back once and the watcher goes on", async () => {
    await severedLock("host-j", async ({ lock, holders, ghost, tryAnother }) => {
      // The pass whose check outlived its deadline (connection.ts gives the call up, it runs on) and the next
      // pass's check, both under way at once over the same severed holder.
      const given = lock.ensureHeld();
      const next = lock.ensureHeld();
      expect(await Promise.allSettled([given, next])).toEqual([
        { status: "fulfilled", value: undefined },
        { status: "fulfilled", value: undefined },
      ]);
      const [now, ...others] = await holders();
      expect(others).toEqual([]);
      expect(now).not.toBe(ghost);
      // And the pass after those: still ours, nothing lost.
      await lock.ensureHeld();
      expect(await holders()).toEqual([now!]);
      expect(await tryAnother()).toBeInstanceOf(LockHeldError);
      await lock.release();
      expect(await holders()).toEqual([]);
    });
  });

  test("a lock whose session was killed is taken again when free, and refused when another watcher took it", async () => {
    const client = await ledger();
    const schema = client.target.schema;
    const lock = await holdPgWatcherLock(async () => client.sql, schema, "host-k", client.name);
    // Waits until the holder's backend has exited (the timeout form of pg_terminate_backend), as a restart would.
    const killHolder = () =>
      asSuperuser(async (sql) => {
        const [row] = await sql`
          SELECT count(pg_terminate_backend(l.pid, 20000))::int AS n FROM pg_locks l
          WHERE l.locktype = 'advisory' AND l.granted AND l.objid = hashtext(${`${schema}:watch:host-k`})::oid`;
        expect(row.n).toBe(1);
      });
    await killHolder();
    await lock.ensureHeld();
    await killHolder();
    // Another watcher of this host got in while this one's session was gone: this one must stop.
    const other = await holdPgWatcherLock(async () => client.sql, schema, "host-k", client.name);
    const lost = await lock.ensureHeld().catch((e: unknown) => e);
    expect(lost).toBeInstanceOf(WatcherLockLostError);
    await other.ensureHeld();
    await Promise.all([other.release(), lock.release()]);
  });
});
