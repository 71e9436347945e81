// The connection budget on PostgreSQL (SPEC §20), end to end through dist/li on a role limited to 40
// connections (as a server with max_connections lowered would be): with a watcher on the host, running
// legs hold no connection (the watcher beats and forwards kill requests); without one, one each (the
// LISTEN); a kill -9 of the watcher loses neither a leg's heartbeat nor a kill request.

import { afterAll, expect, test } from "bun:test";
import { closeSync, existsSync, openSync, writeFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { LI_BINARY, li, liEnv } from "../../helpers/cli.ts";
import { collectLines } from "../../helpers/lines.ts";
import { tempDir } from "../../helpers/ledger.ts";
import { asSuperuser, describePostgres, usePostgresDatabase } from "../../helpers/postgres.ts";
import { until } from "../../helpers/until.ts";
import { DEFAULT_SLOTS } from "../../../src/ledger/postgres/slots.ts";

const ROLE_LIMIT = 40;
/** What the watcher itself holds: its pool of two and the LISTEN. */
const WATCHER_CONNECTIONS = 3;

describePostgres("the connection budget (§20)", () => {
  const db = usePostgresDatabase();
  const spawned: Subprocess[] = [];
  afterAll(() => {
    for (const p of spawned) if (p.exitCode === null && p.signalCode === null) p.kill("SIGKILL");
  });
  let schemas = 0;

  async function world() {
    const role = `cb_${crypto.randomUUID().replace(/-/g, "").slice(0, 12)}`;
    await asSuperuser((sql) => sql.unsafe(`CREATE ROLE ${role} LOGIN CONNECTION LIMIT ${ROLE_LIMIT}`));
    await asSuperuser((sql) => sql.unsafe(`GRANT ALL ON DATABASE "${db.name}" TO ${role}`));
    const home = tempDir("li-pg-budget-");
    const schema = `budget_${process.pid}_${++schemas}`;
    const env: Record<string, string> = { LI_DB: db.url.replace("postgres@", `${role}@`), LI_PG_SCHEMA: schema };
    expect((await li(["agent", "--", "true"], { home, env })).code).toBe(0);
    const connections = () =>
      asSuperuser(async (sql) => (await sql`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = ${db.name} AND usename = ${role}`)[0].n as number);
    const column = (query: string, ...params: unknown[]) => asSuperuser(async (sql) => (await sql.unsafe(query.replaceAll("S.", `"${schema}".`), params as never[])) as Record<string, unknown>[], db.name);
    return { home, env, connections, column };
  }

  function watcher(home: string, env: Record<string, string>) {
    const proc = Bun.spawn([LI_BINARY, "watch"], { env: liEnv(home, env), stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    spawned.push(proc);
    const out = collectLines(proc.stdout);
    return { proc, lines: out.lines, started: until("the watcher's start line", () => out.lines.some((l) => l.includes(" start "))) };
  }

  function leg(home: string, env: Record<string, string>, command: string[], extra: Record<string, string> = {}) {
    const proc = Bun.spawn([LI_BINARY, "agent", "--", ...command], { env: liEnv(home, { ...env, ...extra }), stdin: "ignore", stdout: "ignore", stderr: "pipe" });
    spawned.push(proc);
    return proc;
  }

  const running = async (w: Awaited<ReturnType<typeof world>>) => Number((await w.column("SELECT count(*)::int AS n FROM S.legs WHERE ended_at IS NULL AND command_pid IS NOT NULL"))[0]!.n);

  test("with a watcher, 150 legs started at once on a role allowed 40 connections all start and are recorded, none spooled; li never holds more than the watcher's connections and the host's slots, and while they run only the watcher's", async () => {
    const w = await world();
    const watch = watcher(w.home, w.env);
    await watch.started;
    // The legs' commands wait on a FIFO this test holds open for reading and writing (so no open blocks and
    // nothing polls): each reads one byte, and the test writes 150 to let them all end.
    const fifo = join(w.home, "gate");
    expect(Bun.spawnSync(["mkfifo", "-m", "600", fifo]).exitCode).toBe(0);
    const gate = openSync(fifo, "r+");
    let peak = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) peak = Math.max(peak, await w.connections());
    })();
    const legs = Array.from({ length: 150 }, () => leg(w.home, w.env, ["dd", `if=${fifo}`, "bs=1", "count=1", "status=none"]));
    const stderrs = legs.map((p) => new Response(p.stderr as ReadableStream).text());

    // Setups wait for one of the host's slots (each a connection), so none is refused by the server.
    await until("150 legs running", async () => (await running(w)) === 150, { timeoutMs: 300_000 });
    // Every leg handed itself to the watcher and gave its connections back.
    await until(`li's connections down to the watcher's ${WATCHER_CONNECTIONS}`, async () => (await w.connections()) <= WATCHER_CONNECTIONS, { timeoutMs: 30_000 });
    writeSync(gate, Buffer.alloc(150, "x"));
    const codes = await Promise.all(legs.map((p) => p.exited));
    closeSync(gate);
    sampling = false;
    await sampler;

    expect(codes.filter((c) => c !== 0)).toEqual([]);
    // Each said only its outcome: none was refused a connection, waited past its deadline or went to the spool.
    expect((await Promise.all(stderrs)).filter((text) => !/^li: completed \(run\.completed\.ok\) session \S+ branch \S+\n$/.test(text))).toEqual([]);
    expect(await w.column("SELECT status, count(*)::int AS n FROM S.sessions GROUP BY status")).toEqual([{ status: "completed", n: 151 }]);
    // Setups and final writes come and go, one connection each, at most one per slot.
    console.error(`connection budget: peak ${peak} connections of the role for 150 legs and one watcher (limit ${ROLE_LIMIT}, ${DEFAULT_SLOTS} slots)`);
    // One more for a connection li just closed: the server lists it until its backend has exited, which on a
    // loaded machine can be after the slot went to the next process (seen: 10, the list read right after 9).
    expect(peak).toBeLessThanOrEqual(WATCHER_CONNECTIONS + DEFAULT_SLOTS + 1);
    watch.proc.kill("SIGTERM");
    expect(await watch.proc.exited).toBe(0);
  }, 420_000);

  test("a cross-host li kill reaches a leg through its host's watcher within 1 s, the leg holding no connection", async () => {
    const w = await world();
    const watch = watcher(w.home, w.env);
    await watch.started;
    const proc = leg(w.home, w.env, ["sleep", "60"]);
    await until("the leg running", async () => (await running(w)) === 1);
    await until("the leg's connections given back", async () => (await w.connections()) <= WATCHER_CONNECTIONS);
    const { session_id: sessionId, id: legId } = (await w.column("SELECT session_id, id FROM S.legs WHERE ended_at IS NULL"))[0] as { session_id: string; id: string };

    const killed = await li(["kill", sessionId, "--grace", "1"], { home: w.home, env: { ...w.env, LI_HOST_ID: "another-host" } });

    expect(killed.code).toBe(0);
    expect(killed.stdout).toContain("cancelled (run.cancelled.manual_kill)");
    expect(await proc.exited).not.toBe(0);
    await until("the watcher's forward line", () => watch.lines.some((l) => l.includes(`forward_kill leg_id=${legId}`)));
    watch.proc.kill("SIGTERM");
    await watch.proc.exited;
  }, 60_000);

  test("kill -9 of the watcher: its legs take their heartbeat and LISTEN back at once, so none looks dead and a kill request recorded after still reaches them", async () => {
    const w = await world();
    // Heartbeats every half second, so the test sees several while the leg runs.
    w.env.LI_TEST_HEARTBEAT_SECONDS = "0.5";
    const watch = watcher(w.home, w.env);
    await watch.started;
    const proc = leg(w.home, w.env, ["sleep", "60"]);
    await until("the leg running", async () => (await running(w)) === 1);
    await until("the leg's connections given back", async () => (await w.connections()) <= WATCHER_CONNECTIONS);
    const beat = async () => Number((await w.column("SELECT heartbeat_at FROM S.legs WHERE ended_at IS NULL"))[0]!.heartbeat_at);
    // The watcher beats for it.
    const first = await beat();
    await until("a heartbeat written by the watcher", async () => (await beat()) > first);

    watch.proc.kill("SIGKILL");
    await watch.proc.exited;
    const killedAt = Number((await w.column("SELECT extract(epoch from now())::float8 AS now"))[0]!.now);

    // Its own heartbeat again, on its own connection (one: the LISTEN's; the beat's comes and goes).
    await until("a heartbeat after the watcher died", async () => (await beat()) > killedAt);
    const sessionId = String((await w.column("SELECT session_id FROM S.legs WHERE ended_at IS NULL"))[0]!.session_id);
    const killed = await li(["kill", sessionId, "--grace", "5"], { home: w.home, env: { ...w.env, LI_HOST_ID: "another-host" } });
    expect(killed.code).toBe(0);
    expect(await proc.exited).not.toBe(0);
    expect(await w.column("SELECT status, status_reason_code FROM S.sessions WHERE id = $1", sessionId)).toEqual([{ status: "cancelled", status_reason_code: "run.cancelled.manual_kill" }]);
  }, 60_000);

  test("without a watcher, each running leg holds one connection (its LISTEN), and a cross-host kill still reaches it", async () => {
    const w = await world();
    const gate = join(w.home, "gate");
    const legs = Array.from({ length: 5 }, () => leg(w.home, w.env, ["sh", "-c", `while [ ! -e ${gate} ]; do sleep 1; done`]));
    await until("5 legs running", async () => (await running(w)) === 5);
    await until("one connection per leg", async () => (await w.connections()) === 5);
    expect(existsSync(join(w.home, "watch"))).toBe(false);
    const sessionId = String((await w.column("SELECT session_id FROM S.legs WHERE ended_at IS NULL ORDER BY started_at LIMIT 1"))[0]!.session_id);
    const killed = await li(["kill", sessionId, "--grace", "5"], { home: w.home, env: { ...w.env, LI_HOST_ID: "another-host" } });
    expect(killed.code).toBe(0);
    writeFileSync(gate, "");
    const codes = await Promise.all(legs.map((p) => p.exited));
    expect(codes.filter((c) => c === 0)).toHaveLength(4);
    expect(await w.column("SELECT status, count(*)::int AS n FROM S.sessions GROUP BY status ORDER BY status")).toEqual([
      { status: "cancelled", n: 1 },
      { status: "completed", n: 5 },
    ]);
  }, 60_000);
});
