// li behind PgBouncer in session pooling (docs/postgres.md "Behind a connection pooler"), end to end
// through dist/li and a real PgBouncer in front of the test cluster (test/helpers/pgbouncer.ts):
// - as PgBouncer ships, it refuses li's startup parameters: a refusal, not an outage — a foreground leg
//   runs its command unrecorded with one warning at once (nothing spooled, no retry), reads exit 78 with
//   one line naming the ledger and the refusal, and a URL's password shows nowhere;
// - PgBouncer refusing the login itself (a wrong password: 08P01 as well) is a refusal too;
// - with the documented configuration (ignore_startup_parameters + the database's search_path), legs are
//   recorded, `li wait` prints the frozen line, a waiter is woken by LISTEN/NOTIFY through the pooler,
//   `li watch` holds its per-host session lock through the pooler, and the ledger's invariants hold;
// - a pooler that drops li's search_path with none set on the server: refused (78) before li touches a
//   table, so it never reads or writes another application's tables of the same names;
// - a server that is down behind PgBouncer stays an outage, though PgBouncer says so with 08P01 too.

import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { SQL, type Subprocess } from "bun";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { SESSION_STARTUP_PARAMETERS } from "../../../src/ledger/postgres/startup-parameters.ts";
import { li, LI_BINARY, liEnv, type LiResult } from "../../helpers/cli.ts";
import { collectLines } from "../../helpers/lines.ts";
import { fixture } from "../../helpers/fixtures.ts";
import { tempDir } from "../../helpers/ledger.ts";
import { ledgerRowsOnPostgres, type LedgerRows } from "../../helpers/ledger-rows.ts";
import { pgbouncerInstalled, usePgBouncer } from "../../helpers/pgbouncer.ts";
import { asSuperuser, createPasswordRole, describePostgres, freePort, usePostgresDatabase } from "../../helpers/postgres.ts";
import { NeverHappens, until } from "../../helpers/until.ts";
import { expectInvariants } from "../../legs/late-fixtures.ts";
import { startWait } from "../../wait/seed.ts";

/** No text li writes could contain this by accident; its URL-encoded form differs from it. */
const SECRET = "Pb4-ungu3ssable:p@ss/w0rd?&=";
const SECRET_FORMS = [SECRET, encodeURIComponent(SECRET), "ungu3ssable"];

function expectNoSecret(runs: LiResult[]): void {
  for (const text of runs.flatMap((r) => [r.stdout, r.stderr])) for (const form of SECRET_FORMS) expect(text).not.toContain(form);
}

/** The spool's entries (none when li never made the directory). */
const spooled = (home: string) => (existsSync(join(home, "spool")) ? readdirSync(join(home, "spool")) : []);

describePostgres(
  "li behind PgBouncer in session pooling (docs/postgres.md \"Behind a connection pooler\")",
  () => {
    describe("as PgBouncer ships: li's startup parameters refused", () => {
      const db = usePostgresDatabase();
      const pooler = usePgBouncer();
      let url = "";
      let ledgerName = "";
      beforeAll(async () => {
        const role = await createPasswordRole(SECRET, db.name);
        url = pooler.bouncer.url(db.name, role, SECRET);
        ledgerName = `postgres://127.0.0.1:${pooler.bouncer.port}/${db.name}`;
      });
      const refusal = () => `ledger ${ledgerName}: a pooler refused li's session settings (li sends search_path, statement_timeout, lock_timeout,`;

      test("a foreground leg runs its command unrecorded with one warning at once: no retry, nothing spooled, exit by the command's outcome", async () => {
        const home = tempDir("li-pgb-refused-");
        const runs = [await li(["agent", "--", "true"], { home, env: { LI_DB: url } }), await li(["agent", "--", fixture("exit-with"), "3"], { home, env: { LI_DB: url } })];
        expect(runs.map((r) => r.code)).toEqual([0, 1]);
        for (const run of runs) {
          const warnings = run.stderr.trimEnd().split("\n").filter((line) => line.includes(refusal()));
          expect({ warnings: warnings.length, stderr: run.stderr }).toEqual({ warnings: 1, stderr: run.stderr });
          expect(warnings[0]).toContain("unsupported startup parameter");
          // A refusal is said once and never retried: no outage talk (§17).
          expect(run.stderr).not.toContain("unreachable");
          expect(run.stderr).not.toContain("retrying");
        }
        expect(spooled(home)).toEqual([]);
        expectNoSecret(runs);
        // Nothing reached the server: li's schema was never made.
        expect(await asSuperuser((sql) => sql`SELECT nspname FROM pg_namespace WHERE nspname = 'li'`, db.name)).toHaveLength(0);
      });

      test("li wait, li ls and a detached leg exit 78 with one line naming the ledger and the refusal", async () => {
        const home = tempDir("li-pgb-refused-");
        const runs = [
          await li(["wait", "0000abcd"], { home, env: { LI_DB: url } }),
          await li(["ls"], { home, env: { LI_DB: url } }),
          await li(["agent", "--detach", "--", "true"], { home, env: { LI_DB: url } }),
        ];
        for (const run of runs) {
          expect(run.code).toBe(78);
          const lines = run.stderr.trimEnd().split("\n");
          expect(lines).toHaveLength(1);
          expect(lines[0]).toContain(refusal());
          expect(lines[0]).toContain("docs/postgres.md \"Behind a connection pooler\"");
        }
        expect(spooled(home)).toEqual([]);
        expectNoSecret(runs);
      });
    });

    describe("the documented configuration: ignore_startup_parameters and the database's search_path", () => {
      const db = usePostgresDatabase();
      const pooler = usePgBouncer({ ignoreStartupParameters: SESSION_STARTUP_PARAMETERS });
      let url = "";
      let rows: LedgerRows;
      beforeAll(async () => {
        // What the operator does once (docs/postgres.md): the session settings li can no longer send.
        await asSuperuser(async (sql) => {
          await sql.unsafe(`ALTER DATABASE "${db.name}" SET search_path = li`);
          for (const setting of ["statement_timeout = '60s'", "lock_timeout = '15s'", "idle_in_transaction_session_timeout = '15s'", "jit = off"]) {
            await sql.unsafe(`ALTER ROLE postgres IN DATABASE "${db.name}" SET ${setting}`);
          }
        });
        url = pooler.bouncer.url(db.name);
        rows = ledgerRowsOnPostgres(db.url, "li");
      });
      afterAll(async () => {
        await rows?.close();
      });
      // A test that failed midway leaves no leg waiting for its file, nor a waiter, running.
      const goFiles: string[] = [];
      const waiters: Subprocess[] = [];
      afterEach(async () => {
        for (const go of goFiles.splice(0)) await Bun.write(go, "");
        for (const proc of waiters.splice(0)) {
          proc.kill("SIGKILL");
          await proc.exited;
        }
      });

      test("a session through the pooler gets li's settings from the server", async () => {
        const sql = new SQL({ url, max: 1 });
        try {
          const [row] = await sql`SELECT current_setting('search_path') AS path, current_setting('statement_timeout') AS st, current_setting('lock_timeout') AS lt,
            current_setting('idle_in_transaction_session_timeout') AS idle, current_setting('jit') AS jit`;
          expect(row).toEqual({ path: "li", st: "1min", lt: "15s", idle: "15s", jit: "off" });
        } finally {
          await sql.close();
        }
      });

      test("li agent records a completed leg, li wait prints its frozen line, and the invariants hold", async () => {
        const home = tempDir("li-pgb-pooled-");
        const run = await li(["agent", "--json", "--", "true"], { home, env: { LI_DB: url } });
        expect(run.code).toBe(0);
        expect(run.stderr).not.toContain("warning");
        const record = JSON.parse(run.stdout) as { session_id: string; leg_id: string };
        expect(record).toMatchObject({ status: "completed", persisted: true });
        const waited = await li(["wait", record.session_id], { home, env: { LI_DB: url } });
        expect(waited.code).toBe(0);
        expect(waited.stdout).toStartWith(`${record.session_id}\tstatus=completed\treason=run.completed.ok\tartifact_dir=${home}/runs/`);
        // The rows are in li's schema (the database's search_path put them there), read directly.
        expect(await rows.all("SELECT status, reason_code FROM legs WHERE id = ?", record.leg_id)).toEqual([{ status: "completed", reason_code: "run.completed.ok" }]);
        expect(spooled(home)).toEqual([]);
        await expectInvariants(rows);
      });

      test("a li wait started before a detached leg finishes is woken by LISTEN/NOTIFY through the pooler (its poll an hour away)", async () => {
        const home = tempDir("li-pgb-pooled-");
        const go = join(home, "go");
        goFiles.push(go);
        const started = await li(["agent", "--detach", "--", "sh", "-c", `while [ ! -e ${go} ]; do sleep 0.02; done`], { home, env: { LI_DB: url } });
        expect(started.code).toBe(0);
        const id = started.stdout.trim();
        const wait = startWait(["--interval", "1h", id], home, { LI_DB: url });
        waiters.push(wait.proc);
        // The waiter's LISTEN session, seen by the server behind the pooler.
        await until("li wait's LISTEN", async () =>
          asSuperuser(async (sql) => {
            const [row] = await sql`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = ${db.name} AND query ILIKE ${"LISTEN%li_changes%"}`;
            return (row.n as number) > 0;
          }),
        );
        expect(wait.seen()).toEqual([]);
        await Bun.write(go, "");
        const [line] = await wait.lines(1, 30_000);
        expect(line).toStartWith(`${id}\tstatus=completed\treason=run.completed.ok`);
        expect((await wait.done()).code).toBe(0);
        await expectInvariants(rows);
      }, 60_000);
      test("li watch through the pooler holds its per-host lock on its session: a second watcher of that host is refused (exit 1)", async () => {
        const home = tempDir("li-pgb-pooled-");
        const env = liEnv(home, { LI_DB: url, LI_HOST_ID: "pooled-host" });
        const first = Bun.spawn([LI_BINARY, "watch", "--log-format", "json"], { env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
        waiters.push(first);
        const out = collectLines(first.stdout);
        const start = await until("li watch to start", () => {
          const line = out.lines.find((l) => l.includes('"action":"start"'));
          if (line) return JSON.parse(line) as Record<string, unknown>;
          if (out.ended()) throw new NeverHappens(`li watch ended: ${out.lines.join("\n")}`);
          return null;
        });
        expect(start).toMatchObject({ action: "start", wake: "listen" });
        const second = Bun.spawnSync([LI_BINARY, "watch"], { env, stdout: "pipe", stderr: "pipe" });
        expect(second.exitCode).toBe(1);
        expect(second.stderr.toString()).toContain("another li watch already runs for this ledger on this host");
        expect(first.exitCode).toBeNull();
        first.kill("SIGTERM");
        expect(await first.exited).toBe(0);
      }, 60_000);
    });

    describe("a pooler that drops li's search_path, with none set on the server", () => {
      const db = usePostgresDatabase();
      const pooler = usePgBouncer({ ignoreStartupParameters: SESSION_STARTUP_PARAMETERS });

      test("every command is refused before it reads or writes a table: not even another application's tables of the same names in public", async () => {
        // Another application's table named as one of li's, where the server's default search_path leads.
        await asSuperuser((sql) => sql.unsafe("CREATE TABLE public.sessions (id text PRIMARY KEY, status text)"), db.name);
        const home = tempDir("li-pgb-nopath-");
        const url = pooler.bouncer.url(db.name);
        const leg = await li(["agent", "--", "true"], { home, env: { LI_DB: url } });
        expect(leg.code).toBe(0);
        const said = `ledger postgres://127.0.0.1:${pooler.bouncer.port}/${db.name}: the session's search_path leads to schema public, not li's schema li`;
        expect(leg.stderr).toContain(`li: warning: persistence setup failed (${said}`);
        expect(leg.stderr).not.toContain("retrying");
        for (const args of [["ls"], ["wait", "0000abcd"]]) {
          const run = await li(args, { home, env: { LI_DB: url } });
          expect({ args, code: run.code }).toEqual({ args, code: 78 });
          expect(run.stderr.trimEnd().split("\n")).toEqual([`li: ${said}: a pooler dropped li's search_path; set it on the server (ALTER DATABASE or ALTER ROLE … SET search_path = li), docs/postgres.md "Behind a connection pooler"`]);
        }
        expect(spooled(home)).toEqual([]);
        // The leg's migration made li's schema (it sets its own search_path); no row went anywhere.
        const counts = await asSuperuser(
          async (sql) => (await sql`SELECT (SELECT count(*)::int FROM public.sessions) AS public, (SELECT count(*)::int FROM li.sessions) AS li`)[0],
          db.name,
        );
        expect(counts).toEqual({ public: 0, li: 0 });
      });
    });

    describe("PgBouncer refusing the login (its own authentication)", () => {
      const db = usePostgresDatabase();
      // PgBouncer checks the password itself (scram-sha-256 against its auth_file) before it asks the server for anything.
      const pooler = usePgBouncer({ ignoreStartupParameters: SESSION_STARTUP_PARAMETERS, users: { someone: SECRET }, settings: { auth_type: "scram-sha-256" } });

      test("a wrong password is a refusal, not an outage: the leg runs unrecorded at once, reads exit 78, the passwords show nowhere", async () => {
        const home = tempDir("li-pgb-login-");
        const url = pooler.bouncer.url(db.name, "someone", `${SECRET}-wrong`);
        const said = `ledger postgres://127.0.0.1:${pooler.bouncer.port}/${db.name}: authentication failed (at the pooler): SASL authentication failed (SQLSTATE 08P01)`;
        const leg = await li(["agent", "--", "true"], { home, env: { LI_DB: url } });
        expect(leg.code).toBe(0);
        expect(leg.stderr.trimEnd().split("\n").filter((line) => line.includes(said))).toHaveLength(1);
        expect(leg.stderr).not.toContain("retrying");
        const listed = await li(["ls"], { home, env: { LI_DB: url } });
        expect(listed.code).toBe(78);
        expect(listed.stderr.trimEnd().split("\n")).toEqual([`li: ${said}`]);
        expect(spooled(home)).toEqual([]);
        expectNoSecret([leg, listed]);
      });
    });

    describe("a server that is down behind PgBouncer", () => {
      // Nobody listens on the server port; PgBouncer gives up on a client's query after a second.
      const pooler = usePgBouncer(() => ({ serverPort: freePort(), ignoreStartupParameters: SESSION_STARTUP_PARAMETERS, settings: { query_wait_timeout: "1", server_login_retry: "1" } }));

      test("stays an outage: PgBouncer's query_wait_timeout (08P01 as well) is retried, and the leg spooled", async () => {
        const home = tempDir("li-pgb-down-");
        const run = await li(["agent", "--ledger-retry", "1s", "--", "true"], { home, env: { LI_DB: pooler.bouncer.url("anything") } });
        expect(run.code).toBe(0);
        expect(run.stderr).toContain("li: the ledger is unreachable (");
        expect(run.stderr).toContain("query_wait_timeout (SQLSTATE 08P01)");
        expect(run.stderr).toContain("its whole leg is spooled");
        expect(spooled(home)).toHaveLength(1);
      });
    });
  },
  [pgbouncerInstalled],
);
