// li's commands on a PostgreSQL ledger, end to end through dist/li (SPEC §14): the rows and history a
// leg leaves, `li wait`'s line (the same as SQLite's for the same run), `li show`, `li ls --json`,
// `li state set-status`, a resume, a missing schema (exit 2, nothing created), a newer ledger (78), and
// a URL whose password shows in no output and no stored row. Each test has its own schema.

import { expect, test } from "bun:test";
import { join } from "node:path";
import { li, type LiResult } from "../../helpers/cli.ts";
import { tempDir } from "../../helpers/ledger.ts";
import { asSuperuser, createPasswordRole, describePostgres, postgresCluster, usePostgresDatabase } from "../../helpers/postgres.ts";
import { fixture } from "../../helpers/fixtures.ts";
import { IDLE_IN_TRANSACTION_FLOOR_MS, STATEMENT_TIMEOUT_ENV } from "../../../src/ledger/postgres/client.ts";
import { HEARTBEAT_ENV } from "../../../src/legs/heartbeat.ts";

const SECRET = "Zr8-unm1stakable:p@ss/w0rd?&=";

interface PgHome {
  home: string;
  schema: string;
  env: Record<string, string>;
  run(args: string[]): Promise<LiResult>;
  /** Rows of li's tables in this schema, as the superuser reads them. */
  rows(query: string, params?: unknown[]): Promise<Record<string, unknown>[]>;
}

describePostgres("li on a PostgreSQL ledger (§14)", () => {
  const db = usePostgresDatabase();
  let schemas = 0;

  function pgHome(url = db.url, more: Record<string, string> = {}): PgHome {
    const home = tempDir("li-pg-cli-");
    const schema = `cli_${process.pid}_${++schemas}`;
    const env = { LI_DB: url, LI_PG_SCHEMA: schema, ...more };
    return {
      home,
      schema,
      env,
      run: (args) => li(args, { home, env }),
      rows: (query, params = []) => asSuperuser(async (sql) => [...(await sql.unsafe(query.replaceAll("li.", `"${schema}".`), params as never[]))], db.name),
    };
  }

  function sqliteHome(): { home: string; run(args: string[]): Promise<LiResult> } {
    const home = tempDir("li-pg-cli-sqlite-");
    return { home, run: (args) => li(args, { home }) };
  }

  async function agent(h: { run(args: string[]): Promise<LiResult> }, args: string[]): Promise<{ result: LiResult; record: Record<string, unknown> }> {
    const result = await h.run(["agent", "--json", ...args]);
    return { result, record: JSON.parse(result.stdout) as Record<string, unknown> };
  }

  /** A wait line with the session id and the home directory made neutral, for comparing two ledgers. */
  const neutral = (line: string, id: string, home: string) => line.replaceAll(id, "<session>").replaceAll(home, "<home>");

  test("legs that complete, fail and time out leave their rows and history; li wait prints what SQLite prints; the shortened session limits cut none of their transactions", async () => {
    // Shortened limits: the idle-in-transaction limit at its floor, and a heartbeat transaction every 100 ms.
    const pg = pgHome(db.url, { [STATEMENT_TIMEOUT_ENV]: String(IDLE_IN_TRANSACTION_FLOOR_MS), [HEARTBEAT_ENV]: "0.1" });
    const serverLog = postgresCluster().serverLog;
    const logFrom = Bun.file(serverLog).size;
    const lite = sqliteHome();
    const cases = [
      { args: ["--", "true"], status: "completed", reason: "run.completed.ok", exit: 0 },
      { args: ["--", fixture("exit-with"), "3"], status: "failed", reason: "run.failed.exit_nonzero", exit: 1 },
      { args: ["--timeout", "1s", "--", fixture("forever")], status: "timed_out", reason: "run.timed_out.deadline", exit: 124 },
    ];
    for (const [n, c] of cases.entries()) {
      // The same run id on both ledgers, so the artifact directories differ only by LI_HOME.
      const runId = ["--run-id", `r${n}-${process.pid}`];
      const [onPg, onLite] = [await agent(pg, [...runId, ...c.args]), await agent(lite, [...runId, ...c.args])];
      expect(onPg.result.code).toBe(c.exit);
      expect(onPg.record).toMatchObject({ status: c.status, reason_code: c.reason, persisted: true });
      const id = onPg.record.session_id as string;

      const [session] = await pg.rows("SELECT status, status_reason_code, current_leg_id, exit_code FROM li.sessions WHERE id = $1", [id]);
      expect(session).toMatchObject({ status: c.status, status_reason_code: c.reason, current_leg_id: onPg.record.leg_id });
      const history = await pg.rows("SELECT previous_status, status, reason_code, seq, leg_id FROM li.status_transitions WHERE entity_id = $1 ORDER BY seq", [id]);
      expect(history.map((h) => [h.previous_status, h.status, h.reason_code])).toEqual([
        [null, "running", "run.started.ok"],
        ["running", c.status, c.reason],
      ]);
      expect(history.every((h) => h.leg_id === onPg.record.leg_id)).toBe(true);
      const [leg] = await pg.rows("SELECT status, reason_code, started_at, heartbeat_at, ended_at, pid FROM li.legs WHERE session_id = $1", [id]);
      expect(leg).toMatchObject({ status: c.status, reason_code: c.reason });
      expect(leg!.ended_at).not.toBeNull();
      // The leg that ran a second beat meanwhile.
      if (c.status === "timed_out") expect(Number(leg!.heartbeat_at)).toBeGreaterThan(Number(leg!.started_at));

      const [waitPg, waitLite] = [await pg.run(["wait", id]), await lite.run(["wait", onLite.record.session_id as string])];
      expect(waitPg.code).toBe(waitLite.code);
      expect(neutral(waitPg.stdout, id, pg.home)).toBe(neutral(waitLite.stdout, onLite.record.session_id as string, lite.home));
      expect(waitPg.stdout).toContain(`${id}\tstatus=${c.status}\treason=${c.reason}\tartifact_dir=${pg.home}/runs/`);
    }
    // seq counts every history row of the ledger, in commit order, without a gap.
    const seqs = (await pg.rows("SELECT seq FROM li.status_transitions ORDER BY seq")).map((r) => Number(r.seq));
    expect(seqs).toEqual(seqs.map((_, i) => i + 1));
    // The server ended none of li's sessions for idling inside a transaction.
    expect((await Bun.file(serverLog).text()).slice(logFrom)).not.toContain("idle-in-transaction timeout");
  });

  /** The shape of a JSON value: its keys and each leaf's type, so a bigint read back as a string shows. */
  const shape = (value: unknown): unknown =>
    Array.isArray(value) ? value.map(shape) : value !== null && typeof value === "object" ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, shape(v)])) : value === null ? "null" : typeof value;

  test("li show and li ls --json describe a session, its legs and its branch, in the shape SQLite gives", async () => {
    const pg = pgHome();
    const lite = sqliteHome();
    const { record } = await agent(pg, ["--", fixture("exit-with"), "0"]);
    const onLite = await agent(lite, ["--", fixture("exit-with"), "0"]);
    const id = record.session_id as string;

    const shown = await pg.run(["show", id.slice(0, 8), "--json"]);
    expect(shown.code).toBe(0);
    const json = JSON.parse(shown.stdout);
    expect(json).toMatchObject({ kind: "session", entity: { id, status: "completed" } });
    expect(json.legs).toHaveLength(1);
    expect(typeof json.legs[0].pid).toBe("number");
    expect(json.branches.map((b: { id: string }) => b.id)).toEqual([record.branch_id]);
    expect(json.transitions.map((t: { status: string }) => t.status)).toEqual(["running", "completed"]);
    const liteJson = JSON.parse((await lite.run(["show", onLite.record.session_id as string, "--json"])).stdout);
    expect(shape(json)).toEqual(shape(liteJson));

    const human = await pg.run(["show", id]);
    expect(human.code).toBe(0);
    expect(human.stdout).toContain(`session ${id}`);
    expect(human.stdout).toContain("completed (run.completed.ok)");

    const listed = await pg.run(["ls", "--json"]);
    expect(listed.code).toBe(0);
    const [entity] = JSON.parse(listed.stdout).entities;
    expect(entity).toMatchObject({ id, short_id: id.slice(0, 8), kind: "session", status: "completed", legs: 1, branch_id: record.branch_id });
    expect(entity.command).toEqual([fixture("exit-with"), "0"]);
    expect(shape(JSON.parse(listed.stdout))).toEqual(shape(JSON.parse((await lite.run(["ls", "--json"])).stdout)));
  });

  test("li state set-status applies, refuses a guard conflict and a terminal exit (audited), and takes an override", async () => {
    const pg = pgHome();
    const { record } = await agent(pg, ["--", "true"]);
    const id = record.session_id as string;
    const set = (...args: string[]) => pg.run(["state", "set-status", "session", id, ...args]);

    expect((await set("--status", "completed", "--reason", "run.completed.ok", "--summary", "appended")).code).toBe(0);
    const conflict = await set("--status", "failed", "--reason", "run.failed.exception", "--expect", "running");
    expect(conflict.code).toBe(1);
    const refused = await set("--status", "failed", "--reason", "run.failed.exception");
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("without --override");
    const override = await set("--status", "failed", "--reason", "run.failed.exception", "--override", "--actor", "ops", "--why", "re-judged");
    expect(override.code).toBe(0);
    expect((await pg.run(["state", "set-status", "session", "no-such-id", "--status", "failed", "--reason", "run.failed.exception"])).code).toBe(2);

    const history = await pg.rows("SELECT previous_status, status FROM li.status_transitions WHERE entity_id = $1 ORDER BY seq", [id]);
    expect(history.map((h) => `${h.previous_status}>${h.status}`)).toEqual(["null>running", "running>completed", "completed>completed", "completed>failed"]);
    const audit = await pg.rows("SELECT event_type, actor FROM li.admin_events WHERE entity_id = $1 ORDER BY created_at", [id]);
    expect(audit.map((a) => a.event_type).sort()).toEqual(["status_transition_override", "status_transition_rejected"]);
  });

  test("a resume (li agent -r) reopens the session with a second leg", async () => {
    const pg = pgHome();
    const first = await agent(pg, ["--", fixture("exit-with"), "3"]);
    const second = await agent(pg, ["-r", first.record.branch_id as string, "--", "true"]);
    expect(second.result.code).toBe(0);
    expect(second.record).toMatchObject({ session_id: first.record.session_id, branch_id: first.record.branch_id, status: "completed" });
    const legs = await pg.rows("SELECT seq, status FROM li.legs WHERE session_id = $1 ORDER BY seq", [first.record.session_id]);
    expect(legs).toEqual([
      { seq: 1, status: "failed" },
      { seq: 2, status: "completed" },
    ]);
    const reasons = (await pg.rows("SELECT reason_code FROM li.status_transitions WHERE entity_id = $1 ORDER BY seq", [first.record.session_id])).map((r) => r.reason_code);
    expect(reasons).toEqual(["run.started.ok", "run.failed.exit_nonzero", "session.reopened.by_resume", "run.completed.ok"]);
    const waited = await pg.run(["wait", first.record.session_id as string]);
    expect(waited.stdout).toContain("status=completed\treason=run.completed.ok");
    expect(waited.stdout).toContain(`artifact_dir=${join(pg.home, "runs", first.record.run_id as string, "artifacts")}`);
  });

  test("a host whose clock is 10 minutes ahead or behind writes the server's times, not its own", async () => {
    const pg = pgHome();
    for (const skew of ["600", "-600"]) {
      const before = Date.now() / 1000;
      const created = await li(["state", "create", "invocation"], { home: pg.home, env: { ...pg.env, LI_TEST_CLOCK_SKEW: skew } });
      const { record } = await agent({ run: (args) => li(args, { home: pg.home, env: { ...pg.env, LI_TEST_CLOCK_SKEW: skew } }) }, ["--", fixture("exit-with"), "0"]);
      const after = Date.now() / 1000;
      const id = record.session_id as string;
      const times = [
        ...(await pg.rows("SELECT created_at, updated_at, started_at, ended_at FROM li.sessions WHERE id = $1", [id])),
        ...(await pg.rows("SELECT created_at, updated_at FROM li.invocations WHERE id = $1", [created.stdout.trim()])),
        ...(await pg.rows("SELECT started_at, heartbeat_at, ended_at FROM li.legs WHERE session_id = $1", [id])),
        ...(await pg.rows("SELECT created_at FROM li.status_transitions WHERE entity_id = ANY($1)", [[id, created.stdout.trim()]])),
        ...(await pg.rows("SELECT created_at, updated_at FROM li.branches WHERE session_id = $1", [id])),
      ].flatMap((row) => Object.entries(row).map(([column, value]) => ({ column, value: Number(value) })));
      expect(times.length).toBe(4 + 2 + 3 + 3 + 2);
      // The server shares this machine's clock: every time lies within the real time the two commands took,
      // give or take the clock estimate's error (a fraction of a round trip), far less than the skew.
      const margin = Math.abs(Number(skew)) / 2;
      for (const t of times) expect({ skew, ...t, serverTime: t.value >= before - margin && t.value <= after + margin }).toEqual({ skew, ...t, serverTime: true });
    }
  });

  test("without li's schema, the read-only commands say nothing is recorded yet (exit 2) and create nothing", async () => {
    const pg = pgHome();
    for (const args of [["ls"], ["ls", "--json"], ["wait", "0000abcd"], ["show", "0000abcd"], ["state", "transitions", "0000abcd"]]) {
      const r = await pg.run(args);
      expect({ args, code: r.code }).toEqual({ args, code: 2 });
      expect(r.stderr).toContain(`nothing recorded yet: no ledger at postgres://127.0.0.1:${postgresCluster().port}/${db.name}`);
    }
    expect(await pg.rows("SELECT nspname FROM pg_namespace WHERE nspname = $1", [pg.schema])).toEqual([]);
  });

  test("a ledger written by a newer li is refused (78) by reads and writes alike", async () => {
    const pg = pgHome();
    await agent(pg, ["--", "true"]);
    await pg.rows("UPDATE li.__li_version SET version = version + 7");
    for (const args of [["ls"], ["state", "create", "team"]]) {
      const r = await pg.run(args);
      expect(r.code).toBe(78);
      expect(r.stderr).toContain("written by a newer li");
    }
  });

  test("a URL's password shows in no output, no error and no stored row", async () => {
    const role = await createPasswordRole(SECRET, db.name);
    const { port } = postgresCluster();
    const url = `postgres://${role}:${encodeURIComponent(SECRET)}@127.0.0.1:${port}/${db.name}?sslmode=disable`;
    const pg = pgHome(url);
    const runs: LiResult[] = [await pg.run(["ls"])];
    const { result, record } = await agent(pg, ["--", fixture("exit-with"), "3"]);
    runs.push(result);
    const id = record.session_id as string;
    runs.push(
      await pg.run(["wait", id]),
      await pg.run(["show", id]),
      await pg.run(["show", id, "--json", "--raw"]),
      await pg.run(["ls", "--json"]),
      await pg.run(["state", "set-status", "session", id, "--status", "completed", "--reason", "run.completed.ok"]),
      await pg.run(["agent", "--detach", "--", "true"]),
      await li(["ls"], { home: pg.home, env: { ...pg.env, LI_DB: url.replace(encodeURIComponent(SECRET), encodeURIComponent(`${SECRET}x`)) } }),
    );
    expect(runs.at(-1)!.code).toBe(78);
    expect(runs.at(-1)!.stderr).toContain("authentication failed");
    const stored = await pg.rows(
      `SELECT string_agg(t::text, E'\\n') AS all FROM (SELECT s::text AS t FROM li.sessions s UNION ALL SELECT l::text FROM li.legs l
       UNION ALL SELECT x::text FROM li.status_transitions x UNION ALL SELECT m::text FROM li.messages m UNION ALL SELECT a::text FROM li.admin_events a) rows`,
    );
    const texts = [...runs.flatMap((r) => [r.stdout, r.stderr]), String(stored[0]!.all)];
    expect(String(stored[0]!.all)).toContain(id);
    for (const text of texts) for (const form of [SECRET, encodeURIComponent(SECRET), "unm1stakable"]) expect(text).not.toContain(form);
  });
});
