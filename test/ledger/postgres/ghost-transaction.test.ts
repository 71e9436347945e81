// A ghost transaction on PostgreSQL: li cut off from the server in the middle of a transaction (a
// partition, a host that died without closing its sockets) leaves the server a session that holds the
// transaction's row locks and never hears that its client is gone. li's sessions carry
// idle_in_transaction_session_timeout (src/ledger/postgres/client.ts), so the server ends such a ghost
// and another host's write to those rows goes through. Cut off through the loopback proxy
// (test/helpers/tcp-proxy.ts, black-holed: nothing flows, nothing is closed). The control, a session
// without the limit cut off the same way, earlier, still blocks its writer when li's ghost is gone.

import { expect, test } from "bun:test";
import { openLedger } from "../../../src/ledger/open.ts";
import { resolvePaths } from "../../../src/ledger/location.ts";
import { connectPg, DEFAULT_LIMITS, sessionLimits, STATEMENT_TIMEOUT_ENV, type PgClient } from "../../../src/ledger/postgres/client.ts";
import { resolvePgTarget } from "../../../src/ledger/postgres/options.ts";
import { LedgerUnavailableError } from "../../../src/util/errors.ts";
import { describePostgres, postgresCluster, usePostgresDatabase } from "../../helpers/postgres.ts";
import { pgLedgerBehindProxy } from "../../helpers/pg-ledger.ts";
import { closeAfterTest } from "../../helpers/test-handles.ts";
import { until } from "../../helpers/until.ts";

/** A short statement timeout: li gives the cut-off call up in about 2 s, and its idle limit is the floor (5 s). */
const SHORT = "500";

/** Settles to what `promise` gave or threw, so a test can look whether it has yet. */
function watch<T>(promise: Promise<T>): { settled: boolean; value?: T; error?: unknown } {
  const seen: { settled: boolean; value?: T; error?: unknown } = { settled: false };
  promise.then(
    (value) => Object.assign(seen, { settled: true, value }),
    (error: unknown) => Object.assign(seen, { settled: true, error }),
  );
  return seen;
}

describePostgres("a transaction whose client was cut off (PostgreSQL)", () => {
  const db = usePostgresDatabase();

  test("the server ends li's ghost session once it sits idle past the limit, its row lock goes with it and another writer's update lands; a session without the limit, cut off earlier, still blocks its writer", async () => {
    const { l, proxy, url } = await pgLedgerBehindProxy(db);
    const logFrom = Bun.file(postgresCluster().serverLog).size;
    await l.ledger.createEntity("team", { id: "team-li" });
    await l.ledger.createEntity("team", { id: "team-control" });
    const clients: PgClient[] = [];
    const client = async (at: string, limits = DEFAULT_LIMITS) => {
      const c = await connectPg(resolvePgTarget(at, {}), { limits, max: 1 });
      clients.push(c);
      return c;
    };
    closeAfterTest(() => Promise.all(clients.map((c) => c.sql.close({ timeout: 0 }).catch(() => {}))).then(() => {}));
    const activity = async (pid: number) => (await l.raw.sql`SELECT state, wait_event_type FROM pg_stat_activity WHERE pid = ${pid}`)[0] as { state: string; wait_event_type: string | null } | undefined;

    // The control: the same limits but no idle limit, through the proxy, holding team-control's row lock.
    const controlParked = Promise.withResolvers<void>();
    const controlRelease = Promise.withResolvers<void>();
    const control = await client(`${url}&application_name=li-test-control`, { ...sessionLimits({ [STATEMENT_TIMEOUT_ENV]: SHORT }), idleInTransactionMs: 0 });
    let controlPid = 0;
    const controlTx = watch(
      control.sql.begin(async (tx) => {
        controlPid = Number((await tx`SELECT pg_backend_pid() AS pid`)[0].pid);
        await tx`SELECT id FROM teams WHERE id = 'team-control' FOR UPDATE`;
        controlParked.resolve();
        await controlRelease.promise;
      }),
    );
    await controlParked.promise;

    // li itself, opened as li opens a postgres:// ledger (limits from LI_PG_STATEMENT_TIMEOUT_MS), on a
    // pool of one connection, so the session its transaction runs on is known before the transaction starts.
    const saved = process.env[STATEMENT_TIMEOUT_ENV];
    process.env[STATEMENT_TIMEOUT_ENV] = SHORT;
    const ghostUrl = `${url}&connect_timeout=1&application_name=li-test-ghost`;
    const ledger = openLedger(resolvePaths({ env: { LI_HOME: l.home, LI_DB: ghostUrl } }), { create: false, connections: 1 });
    try {
      expect(await ledger.backend.getEntity("team", "team-li")).not.toBeNull();
      const ghostPid = await until("li's one session", async () => {
        const rows = await l.raw.sql`SELECT pid FROM pg_stat_activity WHERE application_name = 'li-test-ghost'`;
        return rows.length === 1 ? Number(rows[0].pid) : null;
      });
      const parked = Promise.withResolvers<void>();
      const release = Promise.withResolvers<void>();
      // li's own transaction seam, parked with the guarded write's row lock held (SELECT … FOR UPDATE).
      const ghostTx = watch(
        ledger.backend.transaction(async (tx) => {
          await tx.readStatus("team", "team-li");
          parked.resolve();
          await release.promise;
        }),
      );
      await parked.promise;

      // The partition: neither side hears from the other any more, and nothing is closed.
      proxy.blackhole();
      // Two writers on direct connections, each willing to wait far longer than the test runs.
      const patient = { ...DEFAULT_LIMITS, statementTimeoutMs: 120_000, lockTimeoutMs: 120_000 };
      const writer = await client(l.url, patient);
      const controlWriter = await client(l.url, patient);
      const controlWriterPid = Number((await controlWriter.sql`SELECT pg_backend_pid() AS pid`)[0].pid);
      const controlWrite = watch(controlWriter.sql`UPDATE teams SET updated_at = updated_at WHERE id = 'team-control'`);
      const write = watch(writer.sql`UPDATE teams SET updated_at = updated_at WHERE id = 'team-li'`);
      await until("the control's writer to wait on the control's lock", async () => (await activity(controlWriterPid))?.wait_event_type === "Lock");

      // li gives its call up at its deadline (the transaction rolled back as far as li knows; the server does not know).
      await until("li to give the cut-off transaction up", () => ghostTx.settled);
      expect(ghostTx.error).toBeInstanceOf(LedgerUnavailableError);
      expect((ghostTx.error as LedgerUnavailableError).unreachable).toBe(true);

      await until("the other writer's update of li's locked row", () => write.settled, { timeoutMs: 40_000 });
      expect(write.error).toBeUndefined();
      expect((write.value as { count: number }).count).toBe(1);
      // The server ended the ghost for sitting idle in its transaction, and says so in its log. A backend
      // that exits releases its locks (transaction abort) before it leaves pg_stat_activity (its status
      // entry is cleared among the last exit callbacks), so the writer may get through while the ghost's
      // row is still listed for a moment: its going is awaited; the log line was written before either.
      await until("the ghost's session to leave pg_stat_activity", async () => (await activity(ghostPid)) === undefined);
      const log = (await Bun.file(postgresCluster().serverLog).text()).slice(logFrom);
      expect(log).toMatch(new RegExp(`\\[${ghostPid}\\] FATAL:\\s+terminating connection due to idle-in-transaction timeout`));

      // The control, cut off before li's ghost and so idle longer, is still there, still holding its lock.
      expect(await activity(controlPid)).toMatchObject({ state: "idle in transaction" });
      expect(await activity(controlWriterPid)).toMatchObject({ state: "active", wait_event_type: "Lock" });
      expect([...(await l.raw.sql`SELECT pg_blocking_pids(${controlWriterPid}) AS pids`)[0].pids]).toEqual([controlPid]);
      expect(controlWrite.settled).toBe(false);
      expect(log).not.toContain(`[${controlPid}]`);

      // Ended by hand, the control frees its writer too.
      await l.raw.sql`SELECT pg_terminate_backend(${controlPid}, 5000)`;
      await until("the control's writer once the control is ended", () => controlWrite.settled);
      expect(controlWrite.error).toBeUndefined();
      // The parked callbacks end; their clients never hear back through the black hole and are closed after the test.
      release.resolve();
      controlRelease.resolve();
      expect(controlTx.settled).toBe(false);
    } finally {
      ledger.close();
      if (saved === undefined) delete process.env[STATEMENT_TIMEOUT_ENV];
      else process.env[STATEMENT_TIMEOUT_ENV] = saved;
    }
  });
});
