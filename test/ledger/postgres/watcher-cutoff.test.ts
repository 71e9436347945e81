// §17 item 5 on PostgreSQL, end to end: a watcher cut off from the ledger (its LI_DB goes through a
// loopback proxy that black-holes the link: nothing answers, nothing is closed) while legs on other hosts,
// on direct connections, keep running and heartbeating. The cut-off lasts "longer than the heartbeat
// grace" by backdating rather than sleeping: during it, every leg's last sign of life moves two hours back
// (past the 10-minute grace), and the live legs' own beats (every second) then write fresh ones, as they
// would through any outage of the watcher alone. The watcher's clock runs an hour ahead and host A's an
// hour behind: on PostgreSQL every age is on the server's clock.
// After the link heals (severed: the server still keeps the watcher's old sessions, its lock's among them)
// the watcher takes its lock back and counts no heartbeat age from before its regain (so reaps no leg of
// another host by heartbeat for a grace after it), reaps the leg of its own host that really died
// meanwhile (its supervisor probed dead), and none of the live legs; a watcher of host B that never lost
// the ledger reaps the other host's dead leg, so the first one's restraint is the regain rule, not
// blindness. Ledger invariants checked.

import { afterAll, expect, test } from "bun:test";
import { li, LI_BINARY, liEnv } from "../../helpers/cli.ts";
import { describePostgres, usePostgresDatabase } from "../../helpers/postgres.ts";
import { pgTestLedger, type PgTestLedger } from "../../helpers/pg-ledger.ts";
import { startTcpProxy, type TcpProxy } from "../../helpers/tcp-proxy.ts";
import { killedAfterEachTest, NeverHappens, signalPid, until } from "../../helpers/until.ts";
import { detachedLeg, expectInvariants } from "../../legs/late-fixtures.ts";
import { STATEMENT_TIMEOUT_ENV } from "../../../src/ledger/postgres/client.ts";

const HOST_W = { LI_HOST_ID: "cutoff-w", LI_HOST_NAME: "watcher", LI_TEST_CLOCK_SKEW: "3600" };
const HOST_A = { LI_HOST_ID: "cutoff-a", LI_HOST_NAME: "alpha", LI_TEST_CLOCK_SKEW: "-3600" };
const HOST_B = { LI_HOST_ID: "cutoff-b", LI_HOST_NAME: "beta" };
/** Legs beat every second, so they visibly go on beating while the watcher is cut off. */
const BEATING = { LI_TEST_HEARTBEAT_SECONDS: "1" };
/** A black-holed call of the watcher expires in about two seconds (500 ms statement + 500 ms grace + 1 s connect). */
const SHORT = { [STATEMENT_TIMEOUT_ENV]: "500" };
const TWO_HOURS = 2 * 3600;

const leftRunning = killedAfterEachTest();

describePostgres("a watcher cut off from a PostgreSQL ledger past the heartbeat grace (§17 item 5)", () => {
  const db = usePostgresDatabase();
  const opened: Array<PgTestLedger | TcpProxy> = [];
  afterAll(async () => {
    for (const o of opened.splice(0)) await o.close();
  });

  test("while other hosts' legs keep beating: after it reconnects none of them is reaped, the dead leg of its own host is, and another host's dead leg waits out a grace from the regain", async () => {
    const l = await pgTestLedger(db);
    opened.push(l);
    const rows = l.rows();
    const target = new URL(l.url);
    const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port) });
    opened.push(proxy);
    const direct = (host: Record<string, string>) => liEnv(l.home, { ...l.env, ...host, ...BEATING });

    // Live legs on hosts A and B; a leg on A and one on the watcher's own host that will die meanwhile.
    const onA = [await detachedLeg(rows, direct(HOST_A), leftRunning), await detachedLeg(rows, direct(HOST_A), leftRunning)];
    const onB = await detachedLeg(rows, direct(HOST_B), leftRunning);
    const diesOnA = await detachedLeg(rows, direct(HOST_A), leftRunning);
    const diesOnW = await detachedLeg(rows, direct(HOST_W), leftRunning);
    const live = [...onA, onB];

    const watcher = Bun.spawn([LI_BINARY, "watch", "--sweep-interval", "1s", "--phantom-grace", "0", "--log-format", "json"], {
      env: liEnv(l.home, { LI_DB: `${proxy.via(l.url)}&connect_timeout=1`, ...SHORT, ...HOST_W }),
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
    });
    leftRunning.push({ pid: watcher.pid, group: false });
    let out = "";
    let err = "";
    let exited = false;
    const reading = Promise.all([
      (async () => {
        for await (const chunk of watcher.stdout) out += new TextDecoder().decode(chunk);
      })(),
      (async () => {
        for await (const chunk of watcher.stderr) err += new TextDecoder().decode(chunk);
      })(),
    ]);
    void watcher.exited.then(() => (exited = true));
    const logged = (): Array<Record<string, unknown>> => {
      if (exited) throw new NeverHappens(`li watch exited: ${err}${out}`);
      return out.split("\n").filter((line) => line.startsWith("{")).map((line) => JSON.parse(line));
    };
    const reaperRows = () => rows.all<{ entity_id: string }>("SELECT entity_id FROM status_transitions WHERE actor = 'li.watch.reaper' ORDER BY seq");
    await until("the watcher to start", () => logged().some((e) => e.action === "start"));

    proxy.blackhole();
    // Cut off, it keeps trying: pass after pass fails within its deadline (none hangs on the dead link),
    // and it waits between them (a skipped pass is no reason to spin). The outage is logged once (the
    // first failure: in whichever step the pass was when the link died — the live legs' heartbeats wake
    // the watcher all the time, so that is as often mid-pass as at a pass's first call, the lock check);
    // each later pass's attempt is a new connection the proxy accepts and holds.
    await until("the cut-off watcher to fail a call", () => logged().some((e) => e.action === "error"));
    const acceptedAtFirstFailure = proxy.accepted;
    await until("the cut-off watcher to try again, pass after pass", () => proxy.accepted >= acceptedAtFirstFailure + 2);
    expect(logged().filter((e) => e.action === "error")).toHaveLength(1);
    // Meanwhile two legs really die: both processes of each, killed -9.
    for (const dead of [diesOnA, diesOnW]) {
      signalPid(dead.command, "SIGKILL", { group: true, what: "a dying leg's command" });
      signalPid(dead.supervisor, "SIGKILL", { what: "a dying leg's supervisor" });
    }
    // The outage outlasts the heartbeat grace: every last sign of life two hours back...
    await rows.run("UPDATE legs SET started_at = started_at - ?, heartbeat_at = COALESCE(heartbeat_at, started_at) - ?", TWO_HOURS, TWO_HOURS);
    await rows.run("UPDATE sessions SET updated_at = updated_at - ?, started_at = started_at - ?", TWO_HOURS, TWO_HOURS);
    // ...and the live legs, which the cut-off does not reach, beat again on the server's clock.
    const backdatedAt = Date.now() / 1000;
    for (const leg of live) {
      await until(`a heartbeat of session ${leg.id} after the backdating`, async () => {
        const row = await rows.get<{ heartbeat_at: number }>("SELECT heartbeat_at FROM legs WHERE session_id = ?", leg.id);
        return row !== null && row.heartbeat_at >= backdatedAt - 1;
      });
    }
    expect(await reaperRows()).toEqual([]);

    // The link comes back after a partition longer than TCP holds out: the watcher's old connections are
    // gone on its side, while the server still keeps their sessions, its lock's among them.
    const healedAt = Date.now() / 1000;
    proxy.sever();
    const regained = await until("the watcher to regain the ledger", () => logged().find((e) => e.action === "ledger_regained"));
    // On the ledger's (the server's) clock, not the watcher's own, an hour ahead.
    expect(regained.heartbeat_ages_from as number).toBeGreaterThanOrEqual(healedAt - 1);
    expect(regained.heartbeat_ages_from as number).toBeLessThanOrEqual(Date.now() / 1000 + 1);
    // Its own host's dead leg is judged by probing its supervisor: positively dead, reaped at once.
    const reaped = await until("the watcher to reap its own host's dead leg", () => logged().find((e) => e.action === "reap" && e.session_id === diesOnW.id));
    expect(reaped).toMatchObject({ status: "failed", reason: "session.phantom.process_dead", applied: true });
    // In that same pass every other session was judged and left running: the live legs by their fresh
    // heartbeats, the other host's dead leg because no age counts from before the regain.
    expect(logged().filter((e) => e.action === "reap").map((e) => e.session_id)).toEqual([diesOnW.id]);
    for (const leg of [...live, diesOnA]) expect(await rows.get("SELECT status FROM sessions WHERE id = ?", leg.id)).toEqual({ status: "running" });
    expect(await reaperRows()).toEqual([{ entity_id: diesOnW.id }]);

    // A watcher of host B that never lost the ledger judges A's dead leg by its heartbeat: two hours, reaped.
    const other = await li(["watch", "--once", "--log-format", "json"], { home: l.home, env: { ...l.env, ...HOST_B } });
    expect(other.code).toBe(0);
    const otherReaps = other.stdout.split("\n").filter(Boolean).map((line) => JSON.parse(line)).filter((e) => e.action === "reap");
    expect(otherReaps).toEqual([expect.objectContaining({ session_id: diesOnA.id, status: "failed", reason: "session.phantom.process_dead", applied: true })]);
    for (const leg of live) expect(await rows.get("SELECT status FROM sessions WHERE id = ?", leg.id)).toEqual({ status: "running" });
    expect((await reaperRows()).map((r) => r.entity_id).sort()).toEqual([diesOnW.id, diesOnA.id].sort());

    watcher.kill("SIGTERM");
    expect(await watcher.exited).toBe(0);
    await reading;
    await expectInvariants(rows);
  });
});
