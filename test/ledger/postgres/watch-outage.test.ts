// §17 on PostgreSQL: `li watch` through a ledger outage logs it once when it starts and once when it is
// over, not once per pass. The watcher talks to the server through a loopback proxy
// (test/helpers/tcp-proxy.ts) that the test makes drop every connection, then forward again.

import { expect, test } from "bun:test";
import { LI_BINARY, liEnv } from "../../helpers/cli.ts";
import { describePostgres, usePostgresDatabase } from "../../helpers/postgres.ts";
import { pgLedgerBehindProxy } from "../../helpers/pg-ledger.ts";
import { expectInvariants } from "../../legs/late-fixtures.ts";
import { until } from "../../helpers/until.ts";
import { STATEMENT_TIMEOUT_ENV } from "../../../src/ledger/postgres/client.ts";

describePostgres("li watch during a PostgreSQL outage (§17)", () => {
  const db = usePostgresDatabase();

  test("a watcher cut off from the server logs the outage once, stays up, and logs once that the ledger is back; every failed pass is counted in its totals", async () => {
    const { l, proxy, url } = await pgLedgerBehindProxy(db);
    const env = liEnv(l.home, { LI_DB: `${url}&connect_timeout=1`, [STATEMENT_TIMEOUT_ENV]: "500" });
    const watcher = Bun.spawn([LI_BINARY, "watch", "--log-format", "json", "--sweep-interval", "1s"], { env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    const lines: Record<string, unknown>[] = [];
    const reading = (async () => {
      let text = "";
      for await (const chunk of watcher.stdout) {
        text += new TextDecoder().decode(chunk);
        for (let at = text.indexOf("\n"); at >= 0; at = text.indexOf("\n")) {
          lines.push(JSON.parse(text.slice(0, at)) as Record<string, unknown>);
          text = text.slice(at + 1);
        }
      }
    })();
    const actions = (name: string) => lines.filter((line) => line.action === name);
    try {
      await until("the watcher to start", () => actions("start").length === 1);
      proxy.drop();
      await until("the first failure to be logged", () => actions("error").length > 0);
      // Each attempt to reach the server is a connection the proxy accepts and closes. A failed call gives
      // up within its deadline (2 s here) and the next pass tries again: sixty attempts (~15 a failed call
      // on this machine) span several passes, none of which may log again.
      const accepted = proxy.accepted;
      await until("sixty more attempts to reach the ledger", () => proxy.accepted >= accepted + 60, { timeoutMs: 30_000 });
      expect(actions("error")).toHaveLength(1);
      expect(String(actions("error")[0]!.message)).toMatch(/^ledger postgres:\/\/127\.0\.0\.1:\d+\/\S+: /);
      expect(watcher.exitCode).toBeNull();

      proxy.forward();
      await until("the watcher to say the ledger is back", () => actions("ledger_back").length > 0, { timeoutMs: 30_000 });
      watcher.kill("SIGTERM");
      expect(await watcher.exited).toBe(0);
      await reading;
      const [stop] = actions("stop");
      const [back] = actions("ledger_back");
      expect(actions("error")).toHaveLength(1);
      expect(actions("ledger_back")).toHaveLength(1);
      // Every failure still counts: the logged one and those it stood for.
      expect(stop!.errors as number).toBeGreaterThanOrEqual(2);
      expect(back).toMatchObject({ errors_not_logged: (stop!.errors as number) - 1 });
    } finally {
      if (watcher.exitCode === null) watcher.kill("SIGKILL");
    }
    await expectInvariants(l.rows());
  });
});
