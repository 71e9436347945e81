// A watcher whose LISTEN cannot connect (SPEC §14 "Many hosts", issue 29 item 3a): started when the server
// has no free connection for it, li watch logs that its LISTEN is down, runs on its safety poll meanwhile,
// tries the LISTEN again with backoff and logs when it is back, once a connection frees.

import { expect, test } from "bun:test";
import { join } from "node:path";
import { addHandler } from "../../../src/notify/consumers.ts";
import { LI_BINARY, liEnv } from "../../helpers/cli.ts";
import { collectLines } from "../../helpers/lines.ts";
import { usePgTestLedgers } from "../../helpers/pg-ledger.ts";
import { describePostgres, usePostgresDatabase } from "../../helpers/postgres.ts";
import { NeverHappens, until } from "../../helpers/until.ts";
import { RECORD, recorded } from "../../notify/helpers.ts";

describePostgres("li watch when its LISTEN cannot connect (§14 Many hosts)", () => {
  const db = usePostgresDatabase();
  const { open, spawned } = usePgTestLedgers(db);

  test("no free connection at start: listen_down, deliveries by the poll meanwhile, listen_back once a connection frees", async () => {
    const t = await open();
    // The watcher's role may hold two connections: its lock's and its queries'. Its LISTEN would be a third.
    const role = `lr_${process.pid}`;
    for (const statement of [
      `DROP ROLE IF EXISTS ${role}`,
      `CREATE ROLE ${role} LOGIN CONNECTION LIMIT 2`,
      `GRANT CONNECT ON DATABASE "${db.name}" TO ${role}`,
      `GRANT USAGE ON SCHEMA "${t.schema}" TO ${role}`,
      `GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA "${t.schema}" TO ${role}`,
      `GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA "${t.schema}" TO ${role}`,
    ]) {
      await t.raw.sql.unsafe(statement);
    }
    const host = "host-listen";
    const out = join(t.home, "delivered.log");
    await addHandler(t.ledger, { name: "rec", argv: [RECORD, out], kinds: ["invocation"], ids: [], hostId: host });
    const proc = Bun.spawn([LI_BINARY, "watch", "--log-format", "json", "--poll", "1s", "--sweep-interval", "1h", "--fleet-lease", "1h"], {
      env: liEnv(join(t.home, host), { LI_DB: t.url.replace("postgres@", `${role}@`), LI_HOST_ID: host, LI_HOST_NAME: host }),
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
    });
    spawned.push(proc);
    const log = collectLines(proc.stdout);
    const alive = async () => {
      if (proc.exitCode !== null) throw new NeverHappens(`the watcher exited ${proc.exitCode}: ${await new Response(proc.stderr).text()}`);
    };
    const lines = (action: string) => log.lines.filter((l) => l.includes(`"action":"${action}"`)).map((l) => JSON.parse(l));

    await until("listen_down logged", async () => (await alive(), lines("listen_down").length > 0), { timeoutMs: 60_000 });
    const [down] = lines("listen_down");
    expect(down.wake).toBe("poll");
    expect(down.message).toContain("too many connections");
    expect(down.message).not.toContain(role + ":"); // named as the ledger, never with credentials

    // Meanwhile the poll delivers what is owed.
    await t.ledger.createEntity("invocation", { id: "while-down" });
    await t.ledger.transition("invocation", "while-down", { newStatus: "completed", reasonCode: "run.completed.ok" });
    await until("a delivery by the poll while the LISTEN is down", async () => (await alive(), recorded(out).some((l) => l.includes("while-down"))), { timeoutMs: 60_000 });
    expect(lines("listen_back")).toEqual([]);

    // A connection frees: the next try (within the backoff, at most 5 s apart) takes up the LISTEN.
    await t.raw.sql.unsafe(`ALTER ROLE ${role} CONNECTION LIMIT 3`);
    await until("listen_back logged", async () => (await alive(), lines("listen_back").length > 0), { timeoutMs: 60_000 });
    expect(lines("listen_back")[0].wake).toBe("listen");
    const [listening] = await t.raw.sql`SELECT count(*)::int AS n FROM pg_stat_activity WHERE usename = ${role} AND query ILIKE 'LISTEN%'`;
    expect(listening.n).toBeGreaterThan(0);
    // Down once, back once; no error besides.
    expect(lines("listen_down")).toHaveLength(1);
    expect(lines("error")).toEqual([]);
    proc.kill("SIGTERM");
    expect(await proc.exited).toBe(0);
  });
  test("a LISTEN that drops after start (its backend ended): listen_down, the poll meanwhile, listen_back once Bun's client re-subscribes, and commits wake the watcher again", async () => {
    const t = await open();
    const host = "host-drop";
    const out = join(t.home, "delivered.log");
    await addHandler(t.ledger, { name: "rec", argv: [RECORD, out], kinds: ["invocation"], ids: [], hostId: host });
    const app = `li-drop-${process.pid}`;
    // The poll and the sweeps an hour away: after listen_back only the LISTEN can deliver in time.
    const proc = Bun.spawn([LI_BINARY, "watch", "--log-format", "json", "--poll", "1h", "--sweep-interval", "1h", "--fleet-lease", "1h"], {
      env: liEnv(join(t.home, host), { LI_DB: t.url, LI_HOST_ID: host, LI_HOST_NAME: host, PGAPPNAME: app }),
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
    });
    spawned.push(proc);
    const log = collectLines(proc.stdout);
    const alive = async () => {
      if (proc.exitCode !== null) throw new NeverHappens(`the watcher exited ${proc.exitCode}: ${await new Response(proc.stderr).text()}`);
    };
    const lines = (action: string) => log.lines.filter((l) => l.includes(`"action":"${action}"`)).map((l) => JSON.parse(l));
    const listeners = async () =>
      (await t.raw.sql`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND query ILIKE 'LISTEN%' AND backend_type = 'client backend'`) as { pid: number }[];
    await until("the watcher's LISTEN", async () => (await alive(), (await listeners()).length > 0), { timeoutMs: 60_000 });
    const [first] = await listeners();
    expect(lines("listen_down")).toEqual([]);

    await t.raw.sql`SELECT pg_terminate_backend(${first!.pid})`;
    await until("listen_down logged", async () => (await alive(), lines("listen_down").length > 0), { timeoutMs: 60_000 });
    expect(lines("listen_down")[0].wake).toBe("poll");
    await until("listen_back logged", async () => (await alive(), lines("listen_back").length > 0), { timeoutMs: 60_000 });
    expect(lines("listen_back")[0].wake).toBe("listen");
    const again = await listeners();
    expect(again.length).toBeGreaterThan(0);
    expect(again.map((r) => r.pid)).not.toContain(first!.pid);

    // Woken by the LISTEN again: a commit for this host's handler is delivered with the poll an hour away.
    await t.ledger.createEntity("invocation", { id: "after-drop" });
    await t.ledger.transition("invocation", "after-drop", { newStatus: "completed", reasonCode: "run.completed.ok" });
    await until("a delivery woken by the LISTEN after the drop", async () => (await alive(), recorded(out).some((l) => l.includes("after-drop"))), { timeoutMs: 30_000 });
    expect(lines("listen_down")).toHaveLength(1);
    expect(lines("listen_back")).toHaveLength(1);
    expect(lines("error")).toEqual([]);
    proc.kill("SIGTERM");
    expect(await proc.exited).toBe(0);
  });
});
