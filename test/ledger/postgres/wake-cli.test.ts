// Wake-ups and the watcher lock on a PostgreSQL ledger, end to end through dist/li (SPEC §14, issue 11
// items 5 and 6): `li wait` wakes by LISTEN/NOTIFY (its poll an hour away), keeps waiting through a
// server restart and sees a completion committed while it was disconnected; one `li watch` per host id.

import { afterAll, afterEach, expect, test } from "bun:test";
import type { Subprocess } from "bun";
import { openLedger } from "../../../src/ledger/open.ts";
import { resolvePaths } from "../../../src/ledger/location.ts";
import type { Ledger } from "../../../src/ledger/ledger.ts";
import { join } from "node:path";
import { li, LI_BINARY, liEnv } from "../../helpers/cli.ts";
import { collectLines } from "../../helpers/lines.ts";
import { tempDir } from "../../helpers/ledger.ts";
import { asSuperuser, describePostgres, restartPostgresServer, usePostgresDatabase } from "../../helpers/postgres.ts";
import { NeverHappens, until } from "../../helpers/until.ts";
import { RECORD, recorded, standing } from "../../notify/helpers.ts";
import { startWait } from "../../wait/seed.ts";

const spawned: Subprocess[] = [];
afterEach(async () => {
  for (const proc of spawned.splice(0)) {
    proc.kill("SIGKILL");
    await proc.exited;
  }
});

describePostgres("wake-ups and the watcher lock on PostgreSQL, through the binary (§14)", () => {
  const db = usePostgresDatabase();
  const ledgers: Ledger[] = [];
  afterAll(() => {
    for (const l of ledgers.splice(0)) l.close();
  });
  let schemas = 0;

  /**
   * A home whose ledger is its own schema of this file's database. li runs as `role` (default the
   * superuser); the test writes through an in-process ledger as the superuser.
   */
  function pgHome(role?: string) {
    const home = tempDir("li-pg-wake-");
    const schema = `wake_${process.pid}_${++schemas}`;
    const url = role ? db.url.replace("postgres@", `${role}@`) : db.url;
    const env = { LI_DB: url, LI_PG_SCHEMA: schema };
    // The URL names the schema: resolvePaths hands the URL on, and the environment it reads LI_PG_SCHEMA from is this process's.
    const ledger = openLedger(resolvePaths({ env: { LI_HOME: home, LI_DB: `${db.url}&search_path=${schema}` } }), { create: true });
    ledgers.push(ledger);
    /** Sessions of this database whose last statement was a LISTEN (or anything matching `like`). */
    const sessionsDoing = (like: string, user = role ?? "postgres") =>
      asSuperuser(async (sql) => {
        const [row] = await sql`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = ${db.name} AND usename = ${user} AND query ILIKE ${like}`;
        return row.n as number;
      });
    return { home, schema, env, ledger, sessionsDoing };
  }

  /** A role li can log in as, with what a ledger owner needs on this database. */
  async function loginRole(): Promise<string> {
    const role = `lw_${crypto.randomUUID().replace(/-/g, "").slice(0, 12)}`;
    await asSuperuser((sql) => sql.unsafe(`CREATE ROLE ${role} LOGIN`));
    await asSuperuser((sql) => sql.unsafe(`GRANT ALL ON DATABASE "${db.name}" TO ${role}`));
    return role;
  }

  const complete = (ledger: Ledger, id: string) => ledger.updateStatus("invocation", id, { newStatus: "completed", reasonCode: "run.completed.ok" });

  test("li wait on a running target wakes on its completion by NOTIFY: the safety poll is an hour away", async () => {
    const h = pgHome();
    await h.ledger.createEntity("invocation", { id: "job" });
    const wait = startWait(["--interval", "1h", "job"], h.home, h.env);
    spawned.push(wait.proc);
    await until("li wait's LISTEN", async () => (await h.sessionsDoing("LISTEN%li_changes%")) > 0);
    await complete(h.ledger, "job");
    const [line] = await wait.lines(1);
    expect(line).toStartWith("job\tstatus=completed\treason=run.completed.ok");
    expect((await wait.done()).code).toBe(0);
  }, 60_000);

  test("the server restarted while li wait runs: it keeps waiting, reconnects, and sees a completion committed while it was disconnected", async () => {
    const role = await loginRole();
    const h = pgHome(role);
    await h.ledger.createEntity("invocation", { id: "job" });
    // li wait only reads: the everyday role's grants (docs/postgres.md) are more than it needs.
    await asSuperuser(async (sql) => {
      await sql.unsafe(`GRANT USAGE ON SCHEMA "${h.schema}" TO ${role}`);
      await sql.unsafe(`GRANT SELECT ON ALL TABLES IN SCHEMA "${h.schema}" TO ${role}`);
    }, db.name);
    const wait = startWait(["--interval", "1h", "job"], h.home, h.env);
    spawned.push(wait.proc);
    await until("li wait's LISTEN", async () => (await h.sessionsDoing("LISTEN%li_changes%")) > 0);

    // li's role may not log in from just before the restart until after the completion commits: the
    // completion is certainly committed while li wait is disconnected, and only a re-query on its
    // reconnect (not a notice, not the hour-long poll) can show it.
    await asSuperuser((sql) => sql.unsafe(`ALTER ROLE ${role} NOLOGIN`));
    try {
      await restartPostgresServer();
      // The test's own pool lost its connections too: its first statement may meet one the server ended.
      await until("the completion to commit", async () => (await complete(h.ledger, "job"), true));
      expect(await h.sessionsDoing("%")).toBe(0);
      expect(wait.seen()).toEqual([]);
    } finally {
      await asSuperuser((sql) => sql.unsafe(`ALTER ROLE ${role} LOGIN`));
    }
    const [line] = await wait.lines(1, 30_000);
    expect(line).toStartWith("job\tstatus=completed\treason=run.completed.ok");
    expect((await wait.done()).code).toBe(0);
  }, 60_000);

  /** Starts `li watch` as host `hostId`; resolves with the process once it logged its start. */
  async function startWatch(h: ReturnType<typeof pgHome>, hostId: string) {
    const proc = Bun.spawn([LI_BINARY, "watch", "--log-format", "json"], { env: liEnv(h.home, { ...h.env, LI_HOST_ID: hostId }), stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    spawned.push(proc);
    const { lines, ended } = collectLines(proc.stdout);
    const start = await until(`li watch on ${hostId} to start`, () => {
      const found = lines.find((l) => l.includes('"action":"start"'));
      if (found) return JSON.parse(found) as Record<string, unknown>;
      if (ended()) throw new NeverHappens(`li watch on ${hostId} ended: ${lines.join("\n")}`);
      return null;
    });
    return { proc, start, lines };
  }

  test("the server restarted while li watch runs: it keeps running, takes its lock again and delivers a completion committed while it was disconnected, once", async () => {
    const role = await loginRole();
    const h = pgHome(role);
    const asHost = { ...h.env, LI_HOST_ID: "host-w" };
    // li's role creates and owns the schema, as in a real deployment; the test then writes as the superuser.
    const first = await li(["watch", "--once"], { home: h.home, env: asHost });
    expect(first.code).toBe(0);
    const out = join(h.home, "notices");
    await standing(h.ledger, "rec", [RECORD, out], { host: "host-w" });
    await h.ledger.createEntity("invocation", { id: "job" });
    const w = await startWatch(h, "host-w");
    expect(w.start).toMatchObject({ wake: "listen" });
    // Its one listening connection LISTENs for changes and for its legs' kill requests (§20): its last statement is either.
    await until("li watch's LISTEN", async () => (await h.sessionsDoing("LISTEN%li_%")) > 0);

    await asSuperuser((sql) => sql.unsafe(`ALTER ROLE ${role} NOLOGIN`));
    try {
      await restartPostgresServer();
      await until("the completion to commit", async () => (await complete(h.ledger, "job"), true));
      expect(await h.sessionsDoing("%")).toBe(0);
      expect(recorded(out)).toEqual([]);
    } finally {
      await asSuperuser((sql) => sql.unsafe(`ALTER ROLE ${role} LOGIN`));
    }
    await until("the notice of the completion", () => recorded(out).length === 1, { timeoutMs: 30_000 });
    expect(recorded(out)[0]).toContain("completed invocation job");
    // Still this host's one watcher: its lock taken again on a new session, the process running.
    const held = await asSuperuser(
      (sql) => sql`SELECT count(*)::int AS n FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
                   WHERE l.locktype = 'advisory' AND l.granted AND a.usename = ${role} AND l.objid = hashtext(${`${h.schema}:watch:host-w`})::oid`,
    );
    expect(held[0].n).toBe(1);
    expect(w.proc.exitCode).toBeNull();
    expect(w.lines.some((l) => l.includes('"action":"lock_lost"'))).toBe(false);
    w.proc.kill("SIGTERM");
    expect(await w.proc.exited).toBe(0);
    expect(recorded(out)).toHaveLength(1);
  }, 90_000);

  test("one li watch per host id on one database: a second on the same host is refused (exit 1), another host's runs beside it", async () => {
    const h = pgHome();
    const a = await startWatch(h, "host-a");
    expect(a.start).toMatchObject({ action: "start", wake: "listen" });
    const second = Bun.spawnSync([LI_BINARY, "watch"], { env: liEnv(h.home, { ...h.env, LI_HOST_ID: "host-a" }), stdout: "pipe", stderr: "pipe" });
    expect(second.exitCode).toBe(1);
    expect(second.stderr.toString()).toContain("another li watch already runs for this ledger on this host");
    expect(second.stderr.toString()).toContain(`${h.schema}:watch:host-a`);
    const b = await startWatch(h, "host-b");
    // Both hold their host's lock, each on a session of its own.
    const held = await asSuperuser(
      (sql) => sql`SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND granted AND objid IN (hashtext(${`${h.schema}:watch:host-a`})::oid, hashtext(${`${h.schema}:watch:host-b`})::oid)`,
    );
    expect(held[0].n).toBe(2);
    expect(a.proc.exitCode).toBeNull();
    expect(b.proc.exitCode).toBeNull();
    // A stopped watcher's lock is free at once: the next watcher of that host starts.
    a.proc.kill("SIGTERM");
    expect(await a.proc.exited).toBe(0);
    const again = await startWatch(h, "host-a");
    expect(again.proc.exitCode).toBeNull();
  }, 60_000);
});
