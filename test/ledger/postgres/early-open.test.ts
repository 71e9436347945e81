// Opening a PostgreSQL ledger early (src/cli/early-ledger.ts, src/ledger/postgres/early.ts): the entry
// point starts the session before li's modules load, and the command takes it over. Counted through a
// loopback proxy (test/helpers/tcp-proxy.ts), a command opens no more sessions than its pool holds — the
// early one is the one it uses — and a command refused by its validation creates nothing on the server
// and still exits (an early session nobody took over must not keep the process alive), also while that
// session is still connecting to a server that does not answer (it is given up, not awaited).

import { expect, test } from "bun:test";
import { LI_BINARY, li, liEnv } from "../../helpers/cli.ts";
import { asSuperuser, describePostgres, usePostgresDatabase } from "../../helpers/postgres.ts";
import { pgLedgerBehindProxy } from "../../helpers/pg-ledger.ts";
import { tempDir } from "../../helpers/ledger.ts";
import type { TcpProxy } from "../../helpers/tcp-proxy.ts";
import { closeAfterTest } from "../../helpers/test-handles.ts";
import { until } from "../../helpers/until.ts";
import { expectInvariants } from "../../legs/late-fixtures.ts";

describePostgres("a PostgreSQL ledger opened while li loads", () => {
  const db = usePostgresDatabase();

  /** A ledger of its own, reached through a proxy that counts the sessions li opens. */
  const world = async () => {
    const { l, proxy, url } = await pgLedgerBehindProxy(db);
    return { l, proxy, env: { LI_DB: url } };
  };

  /** Sessions `run` opened through the proxy; a session is counted when the proxy accepts it. */
  const sessionsOpenedBy = async (proxy: TcpProxy, run: () => Promise<unknown>) => {
    const before = proxy.accepted;
    await run();
    return proxy.accepted - before;
  };

  test("li wait, li show and li ls each open one session, and the line is the one the ledger holds", async () => {
    const { l, proxy, env } = await world();
    const made = await li(["agent", "--json", "--", "true"], { home: l.home, env });
    expect(made.code).toBe(0);
    const id = (JSON.parse(made.stdout) as { session_id: string }).session_id;

    let waited = { code: -1, stdout: "", stderr: "" };
    expect(await sessionsOpenedBy(proxy, async () => (waited = await li(["wait", id], { home: l.home, env })))).toBe(1);
    expect(waited.code).toBe(0);
    expect(waited.stdout).toStartWith(`${id}\tstatus=completed\treason=run.completed.ok\t`);

    let shown = { code: -1, stdout: "", stderr: "" };
    expect(await sessionsOpenedBy(proxy, async () => (shown = await li(["show", "--json", id], { home: l.home, env })))).toBe(1);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain(id);
    expect(shown.stdout).toContain('"completed"');

    let listed = { code: -1, stdout: "", stderr: "" };
    expect(await sessionsOpenedBy(proxy, async () => (listed = await li(["ls", "--json"], { home: l.home, env })))).toBe(1);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain(id);
    await expectInvariants(l.rows());
  });

  test("li agent opens its pool of two and one LISTEN: the early session is one of the two", async () => {
    const { l, proxy, env } = await world();
    let made = { code: -1, stdout: "", stderr: "" };
    const sessions = await sessionsOpenedBy(proxy, async () => (made = await li(["agent", "--json", "--", "true"], { home: l.home, env })));
    expect(made.code).toBe(0);
    expect(JSON.parse(made.stdout)).toMatchObject({ status: "completed", persisted: true });
    expect(sessions).toBe(3);
    await expectInvariants(l.rows());
  });

  test("a command refused by its validation creates no schema on a fresh database, and exits", async () => {
    const schema = `early_fresh_${process.pid}`;
    const url = `${db.url}&search_path=${schema}`;
    const home = tempDir("li-pg-early-");
    for (const args of [["agent", "--no-such-flag", "--", "true"], ["wait", "--timeout", "soon", "abc"], ["state", "set-status"]]) {
      // Spawned directly: li() would wait for it all the same, but a hang shows here as the test's timeout.
      const proc = Bun.spawn([LI_BINARY, ...args], { env: liEnv(home, { LI_DB: url }), stdin: "ignore", stdout: "pipe", stderr: "pipe" });
      const [stderr, code] = await Promise.all([new Response(proc.stderr).text(), proc.exited]);
      expect({ args, code }).toEqual({ args, code: 2 });
      expect(stderr.trim().split("\n")).toHaveLength(1);
    }
    const [row] = await asSuperuser(async (sql) => [...(await sql`SELECT count(*)::int AS n FROM information_schema.schemata WHERE schema_name = ${schema}`)], db.name);
    expect(row.n).toBe(0);
  });

  test("a server that accepts and never answers: li wait --timeout and a command refused by its validation exit, their sessions given up while still connecting", async () => {
    // connect_timeout is two minutes: a connection attempt li left running would hold the process that long.
    const silent = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    closeAfterTest(() => silent.stop(true));
    const url = `postgres://li@127.0.0.1:${silent.port}/nowhere?sslmode=disable&connect_timeout=120`;
    const home = tempDir("li-pg-early-silent-");
    for (const [args, code, said] of [
      [["wait", "--timeout", "1s", "0000abcd"], 3, "li: --timeout reached before the ledger answered (1 target(s) not looked up)"],
      [["agent", "--no-such-flag", "--", "true"], 2, "--no-such-flag"],
    ] as const) {
      const proc = Bun.spawn([LI_BINARY, ...args], { env: liEnv(home, { LI_DB: url }), stdin: "ignore", stdout: "pipe", stderr: "pipe" });
      const stderr = new Response(proc.stderr).text();
      await until(`li ${args[0]} to exit, its connection attempt given up (not at connect_timeout, 120 s)`, () => proc.exitCode !== null || proc.signalCode !== null, { timeoutMs: 40_000 });
      expect({ args, code: proc.exitCode, stderr: await stderr }).toEqual({ args, code, stderr: expect.stringContaining(said) });
    }
  });

  test("a server that refuses the early session: the command's own open reports it, once, as unavailable (78); with --ledger-retry 0, at once", async () => {
    const { l, proxy, env } = await world();
    proxy.drop();
    const shown = await li(["show", "00000000-0000-0000-0000-000000000000", "--ledger-retry", "0"], { home: l.home, env: { LI_DB: `${env.LI_DB}&connect_timeout=1` } });
    proxy.forward();
    expect(shown.code).toBe(78);
    expect(shown.stderr.trim().split("\n")).toHaveLength(1);
    expect(shown.stderr).toMatch(/^li: ledger postgres:\/\/127\.0\.0\.1:\d+\/\S+: /);
  });
});
