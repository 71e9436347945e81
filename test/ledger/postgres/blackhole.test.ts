// §17 item 1 on PostgreSQL: every call is bounded, also on a connection that stops answering without
// closing. li talks to the server through a loopback proxy (test/helpers/tcp-proxy.ts) that the test
// black-holes: a call gives up within its deadline as unreachable, li retries, and a leg's final write
// lands once when the link heals; `li wait --timeout` is honoured meanwhile. Ledger invariants checked.

import { expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { LI_BINARY, li, liEnv } from "../../helpers/cli.ts";
import { describePostgres, usePostgresDatabase } from "../../helpers/postgres.ts";
import { pgLedgerBehindProxy } from "../../helpers/pg-ledger.ts";
import { until } from "../../helpers/until.ts";
import { RECORD, recorded } from "../../notify/helpers.ts";
import { expectInvariants, legRecorded, waitsFor } from "../../legs/late-fixtures.ts";
import { openLedger } from "../../../src/ledger/open.ts";
import { resolvePaths } from "../../../src/ledger/location.ts";
import { LedgerUnavailableError } from "../../../src/util/errors.ts";
import { STATEMENT_TIMEOUT_ENV } from "../../../src/ledger/postgres/client.ts";

/** Short limits, so a black-holed call expires in about two seconds: 500 ms statement + 500 ms grace + 1 s connect. */
const SHORT = { [STATEMENT_TIMEOUT_ENV]: "500" };

describePostgres("a black-holed connection to a PostgreSQL ledger (§17 item 1)", () => {
  const db = usePostgresDatabase();
  const world = async () => {
    const { l, proxy, url } = await pgLedgerBehindProxy(db);
    return { l, proxy, url: `${url}&connect_timeout=1` };
  };

  test("the proxy forwards, drops and black-holes: a call on a black-holed link fails within its deadline as unreachable, and the next one after forward() is answered", async () => {
    const { l, proxy, url } = await world();
    const saved = process.env[STATEMENT_TIMEOUT_ENV];
    process.env[STATEMENT_TIMEOUT_ENV] = SHORT[STATEMENT_TIMEOUT_ENV];
    const ledger = openLedger(resolvePaths({ env: { LI_HOME: l.home, LI_DB: url } }), { create: false });
    try {
      expect(await ledger.backend.getEntity("session", "none")).toBeNull();
      proxy.blackhole();
      const failed = await ledger.backend.getEntity("session", "none").then(() => null, (e: unknown) => e);
      expect(failed).toBeInstanceOf(LedgerUnavailableError);
      expect((failed as LedgerUnavailableError).unreachable).toBe(true);
      expect((failed as Error).message).toMatch(/^ledger postgres:\/\/127\.0\.0\.1:\d+\/\S+: no answer within 2s \(the server or the network stopped answering\)$/);
      const acceptedBefore = proxy.accepted;
      proxy.forward();
      expect(await ledger.backend.getEntity("session", "none")).toBeNull();
      // The dead pool was dropped: the answer came on a new connection.
      expect(proxy.accepted).toBeGreaterThan(acceptedBefore);
      proxy.drop();
      const dropped = await ledger.backend.getEntity("session", "none").then(() => null, (e: unknown) => e);
      expect((dropped as LedgerUnavailableError).unreachable).toBe(true);
    } finally {
      ledger.close();
      if (saved === undefined) delete process.env[STATEMENT_TIMEOUT_ENV];
      else process.env[STATEMENT_TIMEOUT_ENV] = saved;
    }
  });

  test("the final write black-holed: li gives up on the call, retries, and once the link heals the outcome lands with one terminal transition and one notice; li wait --timeout meanwhile ends by its timeout", async () => {
    const { l, proxy, url } = await world();
    const rows = l.rows();
    const scratch = fs.mkdtempSync(path.join(l.home, "scratch-"));
    const go = path.join(scratch, "go");
    const notices = path.join(scratch, "notices");
    const env = liEnv(l.home, { LI_DB: url, ...SHORT });
    const leg = Bun.spawn([LI_BINARY, "agent", "--ledger-retry", "60s", "--notify", `${RECORD} ${notices}`, "--", ...waitsFor(go)], { env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    let stderr = "";
    const reading = (async () => {
      for await (const chunk of leg.stderr) stderr += new TextDecoder().decode(chunk);
    })();
    const { session_id: id } = await legRecorded(rows);

    proxy.blackhole();
    fs.writeFileSync(go, "");
    await until("li to give up on the black-holed final write and retry", () => stderr.includes("retrying the final write for up to 1m00s"));
    // The deadline expired on the final write itself (its statement deadline, 2 s here, or its connect: a leg
    // with a watcher-less host reconnects for the final write, and a connection is cut to its connect timeout),
    // or on another call of the leg (its heartbeat), which dropped the pool under it.
    expect(stderr).toMatch(/the ledger is unreachable \(ledger postgres:\/\/127\.0\.0\.1:\d+\/\S+: (no answer within [12](\.\d)?s|connection closed)/);
    // Nothing landed meanwhile (read directly, not through the proxy).
    expect(await rows.all("SELECT status FROM sessions WHERE id = ?", id)).toEqual([{ status: "running" }]);

    // A waiter through the same dead link is held to its own deadline. Its connect timeout is well past
    // that: with connect_timeout=1 its connection attempt gave up about 2 ms after the 1 s --timeout, so
    // which of the two ended it (exit 3, or 78 as unreachable) came down to the order of two timers.
    const waiterUrl = url.replace("&connect_timeout=1", "&connect_timeout=10");
    const wait = await li(["wait", "--timeout", "1s", id], { home: l.home, env: { LI_DB: waiterUrl, ...SHORT } });
    expect(wait.code).toBe(3);
    expect(wait.stderr).toMatch(/--timeout reached/);

    proxy.forward();
    const code = await leg.exited;
    await reading;
    expect(code).toBe(0);
    expect(stderr.trimEnd().split("\n").at(-1)).toMatch(new RegExp(`^li: completed \\(run\\.completed\\.ok\\) session ${id} `));
    expect(await rows.all("SELECT previous_status, status FROM status_transitions WHERE entity_id = ? ORDER BY seq", id)).toEqual([
      { previous_status: null, status: "running" },
      { previous_status: "running", status: "completed" },
    ]);
    expect(await rows.all("SELECT status, exit_code FROM legs WHERE session_id = ?", id)).toEqual([{ status: "completed", exit_code: 0 }]);
    await until("the notice", () => recorded(notices).length > 0);
    expect(recorded(notices).map((line) => line.split(" ").slice(1, 4).join(" "))).toEqual([`completed session ${id}`]);
    expect(fs.existsSync(path.join(l.home, "spool")) ? fs.readdirSync(path.join(l.home, "spool")) : []).toEqual([]);
    await expectInvariants(rows);
  });

  test("the answer to the final write's COMMIT lost: li gives up on it, retries, finds its own outcome already there; one terminal transition, one message", async () => {
    const { l, proxy, url } = await world();
    const rows = l.rows();
    const scratch = fs.mkdtempSync(path.join(l.home, "scratch-"));
    const go = path.join(scratch, "go");
    const notices = path.join(scratch, "notices");
    // No heartbeat commits in between: the next COMMIT li sends is the final write's.
    const env = liEnv(l.home, { LI_DB: url, ...SHORT, LI_TEST_HEARTBEAT_SECONDS: "3600" });
    const script = `echo hello from the leg; while [ ! -e ${go} ]; do sleep 0.02; done`;
    const leg = Bun.spawn([LI_BINARY, "agent", "--ledger-retry", "60s", "--notify", `${RECORD} ${notices}`, "--", "sh", "-c", script], { env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    let stderr = "";
    const reading = (async () => {
      for await (const chunk of leg.stderr) stderr += new TextDecoder().decode(chunk);
    })();
    const { session_id: id } = await legRecorded(rows);

    proxy.blackholeAfter("COMMIT");
    fs.writeFileSync(go, "");
    await until("li to give up on the unanswered COMMIT and retry", () => stderr.includes("retrying the final write for up to 1m00s"));
    // The server committed it: the outcome is there although li never heard so.
    await until("the final write committed on the server", async () => (await rows.get<{ status: string }>("SELECT status FROM sessions WHERE id = ?", id))?.status === "completed");
    proxy.forward();
    const code = await leg.exited;
    await reading;
    expect(code).toBe(0);
    expect(stderr).not.toContain("teardown step");
    expect(stderr.trimEnd().split("\n").at(-1)).toMatch(new RegExp(`^li: completed \\(run\\.completed\\.ok\\) session ${id} `));
    expect(await rows.all("SELECT previous_status, status FROM status_transitions WHERE entity_id = ? ORDER BY seq", id)).toEqual([
      { previous_status: null, status: "running" },
      { previous_status: "running", status: "completed" },
    ]);
    expect(await rows.all("SELECT COUNT(*) AS n FROM messages WHERE session_id = ?", id)).toEqual([{ n: 1 }]);
    expect(await rows.all("SELECT status, exit_code FROM legs WHERE session_id = ?", id)).toEqual([{ status: "completed", exit_code: 0 }]);
    await expectInvariants(rows);
  });
});
