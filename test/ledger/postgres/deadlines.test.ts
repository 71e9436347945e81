// §17 on PostgreSQL: a command's own deadline holds on a link that accepts and never answers (a
// partition, a frozen server). li reaches its server through a loopback proxy (test/helpers/tcp-proxy.ts)
// that the test black-holes: connections are accepted and held, nothing comes back. A foreground leg
// starts its command within --ledger-retry plus one connect timeout; li kill --grace 2 gives up with the
// grace; a final write on a link that went silent is given up at --ledger-retry; li wait --timeout 3 on a
// connection that goes silent ends at its timeout and says nothing after its timeout note. The bounds are the ones SPEC §17 names, with half a second for the process itself.

import { expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { LI_BINARY, liEnv } from "../../helpers/cli.ts";
import { describePostgres, usePostgresDatabase } from "../../helpers/postgres.ts";
import { pgLedgerBehindProxy } from "../../helpers/pg-ledger.ts";
import { killedAfterEachTest, until } from "../../helpers/until.ts";
import { detachedLeg, expectInvariants, legRecorded, waitsFor } from "../../legs/late-fixtures.ts";
import { closeAfterTest } from "../../helpers/test-handles.ts";
import { openLedger } from "../../../src/ledger/open.ts";
import { resolvePaths } from "../../../src/ledger/location.ts";
import { LedgerUnavailableError } from "../../../src/util/errors.ts";

/** What starting and ending a process costs beyond the deadline under test. */
const MARGIN_MS = 500;
/** A leg also loads, allocates its run directory and spawns before its command runs (a loaded machine: a second). */
const LEG_MARGIN_MS = 1500;

describePostgres("a command's own deadline on a black-holed PostgreSQL link (§17)", () => {
  const db = usePostgresDatabase();
  const leftRunning = killedAfterEachTest();

  /** Runs li to its end; how long it took, in ms. */
  const timed = async (argv: string[], env: Record<string, string>) => {
    const startedAt = performance.now();
    const proc = Bun.spawn([LI_BINARY, ...argv], { env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    leftRunning.push({ pid: proc.pid, group: false });
    const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    return { code, stdout, stderr, tookMs: performance.now() - startedAt, startedAt };
  };

  for (const retry of [0, 3]) {
    test(`a foreground leg with --ledger-retry ${retry}s starts its command within ${retry} s and one connect timeout (2 s) and spools its whole leg`, async () => {
      const { l, proxy, url } = await pgLedgerBehindProxy(db);
      proxy.blackhole();
      const started = path.join(fs.mkdtempSync(path.join(l.home, "scratch-")), "started");
      // The command notes when it started, on the clock the test reads (nanoseconds since the epoch).
      const run = await timed(["agent", "--ledger-retry", `${retry}s`, "--", "sh", "-c", `date +%s%N > ${started}`], liEnv(l.home, { LI_DB: `${url}&connect_timeout=2` }));
      expect(run.code).toBe(0);
      const startedAtMs = Number(fs.readFileSync(started, "utf8").trim()) / 1e6;
      const spawnedAtMs = performance.timeOrigin + run.startedAt;
      expect(startedAtMs - spawnedAtMs).toBeLessThanOrEqual(retry * 1000 + 2000 + LEG_MARGIN_MS);
      expect(run.stderr.trimEnd().split("\n").at(-1)).toMatch(/^li: the outcome is spooled in \S+\.json \(ledger postgres:\/\/127\.0\.0\.1:\d+\/\S+: /);
      expect(fs.readdirSync(path.join(l.home, "spool"))).toHaveLength(1);
    });
  }

  test("a final write whose connection goes silent is given up at --ledger-retry 2s, not after a whole call deadline (75 s): spooled within 2 s of the command's end", async () => {
    const { l, proxy, url } = await pgLedgerBehindProxy(db);
    const rows = l.rows();
    const go = path.join(fs.mkdtempSync(path.join(l.home, "scratch-")), "go");
    const proc = Bun.spawn([LI_BINARY, "agent", "--ledger-retry", "2s", "--", ...waitsFor(go)], { env: liEnv(l.home, { LI_DB: url }), stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    leftRunning.push({ pid: proc.pid, group: false });
    const stderr = new Response(proc.stderr).text();
    await legRecorded(rows);
    proxy.blackhole();
    const endedAt = performance.now();
    fs.writeFileSync(go, "");
    expect(await proc.exited).toBe(0);
    expect(performance.now() - endedAt).toBeLessThanOrEqual(2000 + MARGIN_MS);
    // The reason is the final write's own deadline (its first call starts a moment after the teardown armed
    // it: 1.9 s on a loaded machine), never the "connection closed" of a call whose pool that deadline dropped.
    expect((await stderr).trimEnd().split("\n").at(-1)).toMatch(/^li: the outcome is spooled in \S+\.json \(ledger postgres:\/\/127\.0\.0\.1:\d+\/\S+: no answer within (1\.9|2)s \(the server or the network stopped answering\)\); /);
    proxy.forward();
    expect(await rows.all("SELECT status FROM sessions")).toEqual([{ status: "running" }]);
  });

  // The interleaving the test above met 1 run in 3: a call of the leg's own (its kill-request look, a heartbeat)
  // was on the pool when the link went silent, and the leg gave that pool back as its command started. The
  // pool then closed gracefully, waiting 5 s for an answer that never came, and held the process that long
  // past its final write's deadline; and that call's "connection closed" became the spooled reason.
  test("a pool given back while a call hangs on it is closed at once when another call's deadline finds the link silent, and that call fails for the deadline's reason", async () => {
    const { l, proxy, url } = await pgLedgerBehindProxy(db);
    const ledger = openLedger(resolvePaths({ env: { LI_HOME: l.home, LI_DB: url } }), { create: false });
    closeAfterTest(() => ledger.close());
    expect(await ledger.backend.getEntity("session", "none")).toBeNull();
    proxy.blackhole();
    // The beat: in flight on the pool's connection, on its own long deadline (75 s).
    const beat = ledger.backend.getEntity("session", "none").then(
      () => null,
      (error: unknown) => error,
    );
    await until("the beat's query to reach the silent link", () => proxy.keptBackFromLi > 0);
    // The leg gives its pool back while the beat still runs on it (its command starts).
    ledger.backend.connections!.release();
    // The final write: cut to 1 s, it reconnects on the silent link and gives it up at its deadline.
    ledger.backend.cutCallsAt!(performance.now() + 1000);
    const final = await ledger.backend.getEntity("session", "none").then(
      () => null,
      (error: unknown) => error,
    );
    expect(final).toBeInstanceOf(LedgerUnavailableError);
    expect((final as Error).message).toMatch(/: no answer within 1s \(the server or the network stopped answering\)$/);
    ledger.close();
    // Nothing of li's is left on the link (the old code kept the given-back pool's connection 4 s longer).
    await until("li to close every connection it made through the proxy", () => proxy.openFromLi === 0, { timeoutMs: 1000 + MARGIN_MS });
    const beatFailure = await beat;
    expect(beatFailure).toBeInstanceOf(LedgerUnavailableError);
    expect((beatFailure as Error).message).toBe((final as Error).message);
  });

  test("li kill --grace 2 returns within its grace (the connect timeout is the default 10 s): exit 78 naming the ledger", async () => {
    const { l, proxy, url } = await pgLedgerBehindProxy(db);
    proxy.blackhole();
    const run = await timed(["kill", "--grace", "2", "0f0f0f0f"], liEnv(l.home, { LI_DB: url }));
    expect(run.code).toBe(78);
    expect(run.tookMs).toBeLessThanOrEqual(2000 + MARGIN_MS);
    expect(run.stderr.trim()).toMatch(/^li: ledger postgres:\/\/127\.0\.0\.1:\d+\/\S+: no answer within 2s \(the server or the network stopped answering\)$/);
  });

  test("li wait --timeout 3 on a connection that goes silent exits at 3 s with exit 3, and nothing on stderr after the timeout note", async () => {
    const { l, proxy, url } = await pgLedgerBehindProxy(db);
    const rows = l.rows();
    const leg = await detachedLeg(rows, liEnv(l.home, l.env), leftRunning);
    const startedAt = performance.now();
    const proc = Bun.spawn([LI_BINARY, "wait", "--timeout", "3", leg.id], { env: liEnv(l.home, { LI_DB: url }), stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    leftRunning.push({ pid: proc.pid, group: false });
    const output = Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
    // Its reads and its LISTEN each hold a connection through the proxy: then the link goes silent.
    await until("li wait to look the leg up and listen", () => proxy.accepted >= 2);
    proxy.blackhole();
    const code = await proc.exited;
    const tookMs = performance.now() - startedAt;
    const [stdout, stderr] = await output;
    expect(code).toBe(3);
    expect(stdout).toBe("");
    expect(tookMs).toBeGreaterThanOrEqual(3000 - MARGIN_MS);
    expect(tookMs).toBeLessThanOrEqual(3000 + MARGIN_MS);
    expect(stderr.trimEnd().split("\n").at(-1)).toBe("li: --timeout reached with 1 target(s) still running");
    expect(stderr).not.toContain("still waiting");
    proxy.forward();
    await expectInvariants(rows);
  });
});
