// li watch's warm supervisor on PostgreSQL (SPEC §19 dispatch, §20 budget): while it waits for a run it
// holds its ledger session already open (a dispatch pays no connect), and it gives that session back after
// a while unused, so an idle watcher holds no connection more; the run it takes later still runs. While it
// waits it also compiles the triggers the leg's setup fires, in a transaction it always rolls back.

import { afterAll, expect, test } from "bun:test";
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { LI_BINARY, li, liEnv } from "../../helpers/cli.ts";
import { collectLines } from "../../helpers/lines.ts";
import { tempDir } from "../../helpers/ledger.ts";
import { asSuperuser, describePostgres, usePostgresDatabase } from "../../helpers/postgres.ts";
import { isAlive, NeverHappens, until, validPid } from "../../helpers/until.ts";

/** The local TCP ports of `pid`'s sockets (its fds' socket inodes looked up in /proc/net/tcp and tcp6). */
function localPorts(pid: number): Set<number> {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(m[1]!);
    } catch {
      // closed meanwhile
    }
  }
  const ports = new Set<number>();
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text = "";
    try {
      text = readFileSync(table, "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols.length > 9 && inodes.has(cols[9]!)) ports.add(parseInt(cols[1]!.split(":")[1]!, 16));
    }
  }
  return ports;
}

describePostgres("li watch's warm supervisor on PostgreSQL", () => {
  const db = usePostgresDatabase();
  const spawned: Subprocess[] = [];
  afterAll(() => {
    for (const p of spawned) if (p.exitCode === null && p.signalCode === null) p.kill("SIGKILL");
  });

  /** The ledger sessions `pid` holds: pg_stat_activity's rows whose client port is one of its sockets. */
  async function sessionsOf(pid: number): Promise<number> {
    const ports = [...localPorts(pid)];
    if (ports.length === 0) return 0;
    return asSuperuser(async (sql) => (await sql`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = ${db.name} AND client_port = ANY(${ports})`)[0].n as number);
  }

  /** status_transitions of `schema`: rows inserted ever (rolled back included, from the statistics) and rows it holds. */
  async function history(schema: string): Promise<{ inserted: number; rows: number }> {
    return asSuperuser(async (sql) => {
      await sql`SELECT pg_stat_clear_snapshot()`;
      const [row] = await sql.unsafe(`SELECT n_tup_ins::int AS inserted, (SELECT count(*)::int FROM "${schema}".status_transitions) AS rows FROM pg_stat_user_tables WHERE schemaname = $1 AND relname = 'status_transitions'`, [schema]);
      return row as { inserted: number; rows: number };
    }, db.name);
  }

  /** The supervisor `watcher` started ahead of need, by /proc: its child whose environment marks it so. */
  function warmOf(watcher: Subprocess): number[] {
    const found: number[] = [];
    for (const name of readdirSync("/proc")) {
      if (!/^\d+$/.test(name)) continue;
      try {
        const stat = readFileSync(`/proc/${name}/stat`, "utf8");
        if (Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) !== watcher.pid) continue;
        if (readFileSync(`/proc/${name}/environ`, "utf8").split("\0").includes("LI_SUPERVISOR_WARM=fd:4")) found.push(Number(name));
      } catch {
        // gone meanwhile
      }
    }
    return found;
  }

  test("while it waits it holds one ledger session and compiles the history's triggers in it, committing nothing; unused past its time it gives it back and waits on; the run it then takes runs", async () => {
    const home = join(tempDir("li-pg-warm-"), "home");
    const env = { LI_DB: db.url, LI_PG_SCHEMA: `warm_${process.pid}` };
    expect((await li(["queue", "set", "warm", "--parallel=0"], { home, env })).code).toBe(0);
    const before = await history(env.LI_PG_SCHEMA);
    const watcher = Bun.spawn([LI_BINARY, "watch"], { env: liEnv(home, { ...env, LI_TEST_WARM_CONNECTION_MS: "3000" }), stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    spawned.push(watcher);
    const lines = collectLines(watcher.stdout).lines;
    const warm = validPid(
      await until("the watcher's warm supervisor", () => {
        if (watcher.exitCode !== null) throw new NeverHappens(`the watcher exited ${watcher.exitCode}: ${lines.join(" | ")}`);
        const pids = warmOf(watcher);
        return pids.length === 1 ? pids[0] : null;
      }, { timeoutMs: 30_000 }),
      "the warm supervisor's pid",
    );
    await until("the warm supervisor's ledger session", async () => (await sessionsOf(warm)) === 1, { timeoutMs: 20_000, intervalMs: 50 });
    await until("the warm supervisor to give its session back", async () => (await sessionsOf(warm)) === 0, { timeoutMs: 30_000, intervalMs: 100 });
    // While it waited it compiled the history's triggers in its session: one row inserted and rolled back
    // (the table's insert count moved; its rows, and so the ledger's history, did not).
    const after = await until("the warm supervisor's rolled-back history row in the statistics", async () => {
      const now = await history(env.LI_PG_SCHEMA);
      return now.inserted > before.inserted ? now : null;
    }, { timeoutMs: 30_000, intervalMs: 200 });
    expect(after.rows).toBe(before.rows);
    expect(isAlive(warm)).toBe(true);
    expect(warmOf(watcher)).toEqual([warm]);

    const submitted = await li(["agent", "--detach", "--queue", "warm", "--", "true"], { home, env });
    expect(submitted.code).toBe(0);
    const id = submitted.stdout.trim();
    let last = "";
    const ended = await until("the run to end", async () => {
      const r = (await li(["show", id, "--json"], { home, env })).stdout;
      last = r;
      const entity = (JSON.parse(r) as { entity?: { status?: string; session_id?: string | null } }).entity;
      return entity?.status === "completed" || entity?.status === "failed" ? entity : null;
    }, { timeoutMs: 30_000, intervalMs: 100 }).catch((e) => {
      throw new Error(`${e}: ${last.slice(0, 600)} | ${lines.join(" | ").slice(-1500)}`);
    });
    expect(ended.status).toBe("completed");
    // The run's supervisor was the one that waited (the leg's pid), connecting for itself after it gave its session back.
    const session = JSON.parse((await li(["show", ended.session_id!, "--json"], { home, env })).stdout) as { legs?: { pid?: number }[] };
    expect(session.legs?.map((l) => l.pid)).toEqual([warm]);
    watcher.kill("SIGTERM");
    expect(await watcher.exited).toBe(0);
  }, 90_000);
});
