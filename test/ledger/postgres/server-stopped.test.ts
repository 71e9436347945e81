// §17 on PostgreSQL, end to end, with the server really stopped (pg_ctl stop -m fast):
// - back after the command ended but within --ledger-retry: the command runs on through failed
//   heartbeats (one warning), the final write is retried until the server is back, and the outcome lands
//   with the leg's own times: a complete history, one terminal transition, one notice, nothing spooled;
// - away past --ledger-retry: the outcome is spooled, li exits by the command's outcome, a `li wait`
//   started during the outage keeps waiting, and once the server is back a real `li watch` replays the
//   entry: one terminal transition with the leg's end time, one notice, an empty spool, and the waiter
//   prints the real outcome.
// Every test ends with the ledger's invariants. In a file of its own: stopping the server stops every
// database of this test process's cluster.

import { afterAll, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { LI_BINARY, li, liEnv } from "../../helpers/cli.ts";
import { asSuperuser, describePostgres, restartPostgresServer, usePostgresDatabase } from "../../helpers/postgres.ts";
import { pgTestLedger, type PgTestLedger } from "../../helpers/pg-ledger.ts";
import { startTcpProxy, type TcpProxy } from "../../helpers/tcp-proxy.ts";
import { killedAfterEachTest, NeverHappens, until } from "../../helpers/until.ts";
import { RECORD, recorded } from "../../notify/helpers.ts";
import { detachedLeg, expectInvariants, legRecorded, waitsFor } from "../../legs/late-fixtures.ts";

const serverStartedAt = () => asSuperuser(async (sql) => Number((await sql`SELECT extract(epoch from pg_postmaster_start_time())::float8 AS s`)[0].s));

describePostgres("the PostgreSQL server stopped while a leg runs (§17)", () => {
  const db = usePostgresDatabase();
  const opened: Array<PgTestLedger | TcpProxy> = [];
  const leftRunning = killedAfterEachTest();
  afterAll(async () => {
    for (const l of opened.splice(0)) await l.close();
  });
  /** A ledger of its own, and in its home the file `go` that ends the leg's command and the file its handler records notices in. */
  const world = async () => {
    const l = await pgTestLedger(db);
    opened.push(l);
    const scratch = fs.mkdtempSync(path.join(l.home, "scratch-"));
    return { l, go: path.join(scratch, "go"), notices: path.join(scratch, "notices") };
  };

  test("back within --ledger-retry: the command runs on through failed heartbeats, the final write waits for the server, and the outcome lands once with the leg's own end time; one notice, nothing spooled", async () => {
    const { l, go, notices } = await world();
    const before = l.rows();
    // Heartbeats every second, so some fail while the server is down: the warning is said once, not per beat.
    const leg = background(["agent", "--ledger-retry", "60s", "--notify", `${RECORD} ${notices}`, "--", ...waitsFor(go, 3)], liEnv(l.home, { ...l.env, LI_TEST_HEARTBEAT_SECONDS: "1" }));
    const { session_id: id, id: legId } = await legRecorded(before);
    await before.close();

    let wroteGoAt = 0;
    let sawRetryAt = 0;
    await restartPostgresServer(async () => {
      /** `said` on li's stderr while li agent still runs (it must not exit while the server is down). */
      const whileRunning = (said: string) => () => {
        if (leg.seen.stderr.includes(said)) return true;
        if (leg.seen.exited) throw new NeverHappens(`li agent exited while the server was down:\n${leg.seen.stderr}`);
        return false;
      };
      // The command is not stopped because the ledger is gone: its heartbeat fails and it runs on.
      await until("the leg's heartbeat to fail while the server is down", whileRunning("warning: heartbeat failed"));
      wroteGoAt = Date.now() / 1000;
      fs.writeFileSync(go, "");
      await until("li to retry the final write while the server is down", whileRunning("retrying the final write for up to 1m00s"));
      sawRetryAt = Date.now() / 1000;
      expect(leg.seen.exited).toBe(false);
    });
    const backAt = await serverStartedAt();

    expect(await leg.done).toBe(1); // the command's own exit 3, as li agent maps a failed command
    const stderr = leg.seen.stderr;
    const said = stderr.trimEnd().split("\n");
    expect(said.filter((line) => line.includes("heartbeat failed"))).toHaveLength(1);
    expect(said.filter((line) => line.includes("retrying the final write"))).toHaveLength(1);
    expect(stderr).toMatch(/the ledger is unreachable \(ledger postgres:\/\/127\.0\.0\.1:\d+\/\S+: /);
    expect(said.at(-1)).toMatch(new RegExp(`^li: failed \\(run\\.failed\\.exit_nonzero\\) session ${id} `));

    const rows = l.rows();
    expect(await rows.all("SELECT previous_status, status, actor FROM status_transitions WHERE entity_id = ? ORDER BY seq", id)).toEqual([
      { previous_status: null, status: "running", actor: "li agent" },
      { previous_status: "running", status: "failed", actor: "li agent" },
    ]);
    expect(await rows.all("SELECT status, status_reason_code, exit_code FROM sessions WHERE id = ?", id)).toEqual([{ status: "failed", status_reason_code: "run.failed.exit_nonzero", exit_code: 3 }]);
    expect(await rows.all("SELECT status, exit_code FROM legs WHERE id = ?", legId)).toEqual([{ status: "failed", exit_code: 3 }]);
    // The leg's own end (before the server came back), not the moment the write finally landed.
    const session = (await rows.get<{ ended_at: number }>("SELECT ended_at FROM sessions WHERE id = ?", id))!;
    const legRow = (await rows.get<{ ended_at: number }>("SELECT ended_at FROM legs WHERE id = ?", legId))!;
    const written = (await rows.get<{ created_at: number }>("SELECT created_at FROM status_transitions WHERE entity_id = ? AND terminal_event = 1", id))!;
    expect(legRow.ended_at).toBe(session.ended_at);
    expect(session.ended_at).toBeGreaterThanOrEqual(wroteGoAt - 1);
    expect(session.ended_at).toBeLessThan(backAt);
    // The transition is stamped when it landed, after the server came back. Compared on li's own clock (the
    // same process stamped both): li's estimate of the server's clock can run tens of ms behind it (its
    // first round trip is read after its modules load), which is more than the server takes from its start
    // to a first connection. Its leg ended before li said it was retrying, and the write landed after the
    // server's start, so the two stamps lie at least that far apart.
    expect(written.created_at - session.ended_at).toBeGreaterThanOrEqual(backAt - sawRetryAt);
    expect(fs.existsSync(path.join(l.home, "spool")) ? fs.readdirSync(path.join(l.home, "spool")) : []).toEqual([]);

    // The leg pushed its notice once it landed; a watcher pass afterwards finds nothing owed.
    await until("the notice", () => recorded(notices).length > 0);
    const watch = await li(["watch", "--once"], { home: l.home, env: l.env });
    expect(watch.code).toBe(0);
    expect(recorded(notices).map((line) => line.split(" ").slice(1, 4).join(" "))).toEqual([`failed session ${id}`]);
    await expectInvariants(rows);
  });
  test("away past --ledger-retry: the outcome is spooled and li exits by the command's outcome; li wait started during the outage waits, and once the server is back a real li watch replays it: one terminal transition with the leg's end time, one notice, an empty spool, the waiter prints the outcome", async () => {
    const { l, go, notices } = await world();
    const before = l.rows();
    const spool = path.join(l.home, "spool");
    const spoolFiles = () => (fs.existsSync(spool) ? fs.readdirSync(spool).sort() : []);
    const leg = background(["agent", "--ledger-retry", "3s", "--notify", `${RECORD} ${notices}`, "--", ...waitsFor(go, 0)], liEnv(l.home, l.env));
    const { session_id: id } = await legRecorded(before);
    await before.close();
    // The waiter's connections go through a proxy that only forwards: its count of accepted connections
    // shows the waiter trying the stopped server, again and again, while it waits.
    const target = new URL(l.url);
    const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port) });
    opened.push(proxy);

    let waiter: ReturnType<typeof background> | undefined;
    let entry: { id: string; spooled_at: number; final: { endedAt: number } } | undefined;
    await restartPostgresServer(async () => {
      fs.writeFileSync(go, "");
      expect(await leg.done).toBe(0); // the command's outcome, although nothing could be recorded
      expect(leg.seen.stderr).toContain("retrying the final write for up to 3s");
      expect(leg.seen.stderr.trimEnd().split("\n").at(-1)).toMatch(
        new RegExp(`^li: the outcome is spooled in ${spool}/\\S+\\.json \\(ledger postgres://127\\.0\\.0\\.1:\\d+/\\S+: .*\\); li watch, or any li command that writes, records it once the ledger is back; it was completed \\(run\\.completed\\.ok\\) session ${id} `),
      );
      const files = spoolFiles();
      expect(files).toHaveLength(1);
      entry = JSON.parse(fs.readFileSync(path.join(spool, files[0]!), "utf8"));
      expect(entry).toMatchObject({ session_id: id, setup: null, final: { status: "completed", reasonCode: "run.completed.ok", exitCode: 0 } });

      waiter = background(["wait", id, "--timeout", "120s"], liEnv(l.home, { LI_DB: proxy.via(l.url) }));
      leftRunning.push({ pid: waiter.proc.pid, group: false });
      await until("li wait to try the stopped server more than once", () => {
        if (waiter!.seen.exited) throw new NeverHappens(`li wait exited during the outage: ${waiter!.seen.stderr}`);
        return proxy.accepted >= 2;
      });
    });

    // Back: nothing recorded the outcome yet, so the waiter still waits and nobody was told.
    const rows = l.rows();
    expect(await rows.all("SELECT status FROM sessions WHERE id = ?", id)).toEqual([{ status: "running" }]);
    expect(recorded(notices)).toEqual([]);
    expect(waiter!.seen.exited).toBe(false);

    const watcher = background(["watch", "--log-format", "json"], liEnv(l.home, l.env));
    leftRunning.push({ pid: watcher.proc.pid, group: false });
    const logged = () => watcher.seen.stdout.split("\n").filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>);
    const replays = await until("li watch to replay the spooled outcome", () => {
      if (watcher.seen.exited) throw new NeverHappens(`li watch exited: ${watcher.seen.stderr}`);
      const r = logged().filter((e) => e.action === "replay");
      return r.length > 0 && r;
    });
    expect(replays).toEqual([expect.objectContaining({ entry: entry!.id, session_id: id, result: "applied", status: "completed" })]);
    expect(await waiter!.done).toBe(0);
    expect(waiter!.seen.stdout).toMatch(new RegExp(`^${id}\\tstatus=completed\\treason=run\\.completed\\.ok\\t`));
    const delivered = await until("li watch to deliver the replayed outcome's notice", () => logged().find((e) => e.action === "deliver"));
    expect(delivered).toMatchObject({ state: "acked" });
    await until("the notice", () => recorded(notices).length > 0);
    watcher.proc.kill("SIGTERM");
    expect(await watcher.done).toBe(0);
    expect(logged().filter((e) => e.action === "replay" || e.action === "deliver")).toHaveLength(2);
    expect(logged().filter((e) => e.action === "error")).toEqual([]);
    // Another pass finds nothing more to replay or deliver.
    const again = await li(["watch", "--once", "--log-format", "json"], { home: l.home, env: l.env });
    expect(again.code).toBe(0);
    expect(again.stdout).not.toContain('"replay"');
    expect(again.stdout).not.toContain('"deliver"');

    const terminal = await rows.all<{ status: string; actor: string; metadata: string; created_at: number }>(
      "SELECT status, actor, metadata, created_at FROM status_transitions WHERE entity_id = ? AND terminal_event = 1 ORDER BY seq",
      id,
    );
    expect(terminal.map((t) => [t.status, t.actor])).toEqual([["completed", "li.replay"]]);
    expect(JSON.parse(terminal[0]!.metadata)).toMatchObject({ recorded_late: true, spooled_at: entry!.spooled_at });
    // The leg's own end, not the replay's time.
    expect(terminal[0]!.created_at).toBe(entry!.final.endedAt);
    expect(await rows.all("SELECT status, ended_at, exit_code FROM sessions WHERE id = ?", id)).toEqual([{ status: "completed", ended_at: entry!.final.endedAt, exit_code: 0 }]);
    expect(await rows.all("SELECT status, exit_code FROM legs WHERE session_id = ?", id)).toEqual([{ status: "completed", exit_code: 0 }]);
    expect(await rows.all("SELECT id, session_id FROM spool_replays")).toEqual([{ id: entry!.id, session_id: id }]);
    expect(spoolFiles()).toEqual([]);
    expect(recorded(notices).map((line) => line.split(" ").slice(1, 4).join(" "))).toEqual([`completed session ${id}`]);
    await expectInvariants(rows);
  });
  test("li wait and li watch listening through a restart: no line of Bun's driver on stderr (li's own note is enough), and both go on once the server is back", async () => {
    const { l } = await world();
    const rows = l.rows();
    const leg = await detachedLeg(rows, liEnv(l.home, l.env), leftRunning);
    // Through proxies that only forward: their counts show each process trying the stopped server again.
    const target = new URL(l.url);
    const viaProxy = async () => {
      const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port) });
      opened.push(proxy);
      return proxy;
    };
    const waitProxy = await viaProxy();
    const watchProxy = await viaProxy();
    const waiter = background(["wait", leg.id, "--timeout", "120s"], liEnv(l.home, { LI_DB: waitProxy.via(l.url) }));
    const watcher = background(["watch", "--log-format", "json", "--sweep-interval", "1s"], liEnv(l.home, { LI_DB: watchProxy.via(l.url) }));
    leftRunning.push({ pid: waiter.proc.pid, group: false }, { pid: watcher.proc.pid, group: false });
    // Listening: li wait has its read connection and its LISTEN's, li watch has started.
    await until("li wait and li watch to listen", () => waitProxy.accepted >= 2 && watcher.seen.stdout.includes('"action":"start"'));
    await restartPostgresServer(async () => {
      const [waits, watches] = [waitProxy.accepted, watchProxy.accepted];
      // Bun's LISTEN retries with a backoff from a second on: several tries each, every one refused.
      await until("both to try the stopped server several times", () => {
        if (waiter.seen.exited || watcher.seen.exited) throw new NeverHappens(`exited while the server was down:\n${waiter.seen.stderr}${watcher.seen.stderr}`);
        return waitProxy.accepted >= waits + 3 && watchProxy.accepted >= watches + 3;
      }, { timeoutMs: 30_000 });
    });
    const kill = await li(["kill", leg.id], { home: l.home, env: l.env });
    expect(kill.code).toBe(0);
    expect(await waiter.done).toBe(1);
    expect(waiter.seen.stdout).toMatch(new RegExp(`^${leg.id}\\tstatus=cancelled\\t`));
    watcher.proc.kill("SIGTERM");
    expect(await watcher.done).toBe(0);
    expect(waiter.seen.stderr).not.toContain("bun:sql");
    expect(watcher.seen.stderr).not.toContain("bun:sql");
    await expectInvariants(rows);
  });
});

/** li in the background, its stderr (and stdout) readable while it runs. */
function background(argv: string[], env: Record<string, string>) {
  const proc = Bun.spawn([LI_BINARY, ...argv], { env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const seen = { stdout: "", stderr: "", exited: false };
  const pump = async (stream: ReadableStream<Uint8Array>, key: "stdout" | "stderr") => {
    const decoder = new TextDecoder();
    for await (const chunk of stream) seen[key] += decoder.decode(chunk, { stream: true });
  };
  const done = Promise.all([pump(proc.stdout, "stdout"), pump(proc.stderr, "stderr"), proc.exited]).then(([, , code]) => {
    seen.exited = true;
    return code;
  });
  return { proc, seen, done };
}
