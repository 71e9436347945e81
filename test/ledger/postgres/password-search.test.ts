// A URL's password never leaves li (SPEC §14 "Credentials", issue 11 item 7). A run on a PostgreSQL ledger
// whose URL carries a password (a role that must give one: test/helpers/postgres.ts) exercises every kind
// of output li has — stdout and stderr of each command, --json, li show (also --raw), the envelope and
// environment a handler is handed, every stored row of every table, every file of the run directories —
// and each is searched for the password in every form it may take: not found.

import { afterAll, expect, test } from "bun:test";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { connectPg } from "../../../src/ledger/postgres/client.ts";
import { resolvePgTarget } from "../../../src/ledger/postgres/options.ts";
import { li, type LiResult } from "../../helpers/cli.ts";
import { fixture } from "../../helpers/fixtures.ts";
import { tempDir } from "../../helpers/ledger.ts";
import { createPasswordRole, describePostgres, postgresCluster, usePostgresDatabase } from "../../helpers/postgres.ts";
import { until } from "../../helpers/until.ts";
import { RECORD, recorded } from "../../notify/helpers.ts";

/** Nothing li writes could contain this by accident; its percent-encoded form differs from it. */
const SECRET = "Zk4-unmistakab1e:p@ss/w0rd?&=";
const FORMS = [SECRET, encodeURIComponent(SECRET), "unmistakab1e"];

/** Every file under `dir`, with its text (binary files are searched as latin1, so no byte is skipped). */
function filesUnder(dir: string): { path: string; text: string }[] {
  const out: { path: string; text: string }[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const path = join(d, name);
      const st = statSync(path, { throwIfNoEntry: false });
      if (st?.isDirectory()) walk(path);
      else if (st?.isFile()) out.push({ path, text: readFileSync(path, "latin1") });
    }
  };
  walk(dir);
  return out;
}

function leaks(what: string, text: string): string[] {
  return FORMS.filter((form) => text.includes(form)).map((form) => `${what} shows the password (${form}): …${text.slice(Math.max(0, text.indexOf(form) - 80), text.indexOf(form) + 80)}…`);
}

describePostgres("a PostgreSQL ledger whose URL carries a password", () => {
  const db = usePostgresDatabase();
  const toClose: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const close of toClose) await close();
  });

  test("no output, stored row, envelope or run-directory file of a whole run contains the password", async () => {
    const role = await createPasswordRole(SECRET, db.name);
    const { port } = postgresCluster();
    const url = `postgres://${role}:${encodeURIComponent(SECRET)}@127.0.0.1:${port}/${db.name}?sslmode=disable&search_path=li_pw`;
    const home = tempDir("li-pw-");
    const out = join(home, "handled");
    const runs: { args: string[]; result: LiResult }[] = [];
    const run = async (args: string[], env: Record<string, string> = { LI_DB: url }) => {
      const result = await li(args, { home, env });
      runs.push({ args, result });
      return result;
    };

    // A handler standing on every terminal event, and legs that finish, fail, carry a --notify and are killed.
    expect((await run(["events", "handlers", "add", "rec", "--", RECORD, out])).code).toBe(0);
    // (The leg's command inherits li's environment, LI_DB included, as any child does: what it prints is its own.)
    expect((await run(["agent", "--notify", `${RECORD} ${out}.notify {status} {session_id}`, "--", "/bin/echo", "hello"])).code).toBe(0);
    await run(["agent", "--", fixture("exit-with"), "3"]);
    const detached = (await run(["agent", "--detach", "--", fixture("forever")])).stdout.trim();
    expect(detached).toMatch(/^[0-9a-f-]{36}$/);
    await run(["kill", detached]);
    await run(["--db", url, "state", "create", "invocation"]);
    expect((await run(["watch", "--once"])).code).toBe(0);
    await run(["events", "deliver"]);
    // The killed leg's supervisor runs the handler itself (push, after li kill saw the session end) and
    // holds that delivery's claim meanwhile, so the passes above skip it: its line may come after them.
    await until("the three legs' notices", () => recorded(out).length >= 3);

    // Every view, in every format, and the errors a user may meet.
    const listed = JSON.parse((await run(["ls", "--json"])).stdout) as { entities: { id: string }[] };
    expect(listed.entities.length).toBeGreaterThanOrEqual(4);
    await run(["ls"]);
    for (const { id } of listed.entities) {
      for (const view of [[], ["--json"], ["--raw"]]) await run(["show", id, ...view]);
      await run(["wait", "--timeout", "1", id]);
      await run(["logs", id]);
      await run(["state", "transitions", id]);
    }
    await run(["wait", "--timeout", "1", "no-such-id"]);
    await run(["show", "ffffffff"]);
    await run(["events", "handlers", "ls", "--json"]);
    await run(["events", "dead", "--json"]);
    await run(["state", "doctor", "--dry-run"]);
    await run(["state", "prune", "--dry-run", "--json"]);
    await run(["kill", "--all-stale", "--dry-run"]);
    // The same URL with a wrong password, and a server that is not there: refused, named, not shown.
    const wrong = url.replace(encodeURIComponent(SECRET), encodeURIComponent(`${SECRET}x`));
    expect((await run(["ls"], { LI_DB: wrong })).code).toBe(78);
    const nowhere = url.replace(`:${port}/`, ":1/");
    expect((await run(["ls"], { LI_DB: nowhere })).code).toBe(78);
    // PGPASSWORD instead of the URL's.
    expect((await run(["ls"], { LI_DB: url.replace(`:${encodeURIComponent(SECRET)}@`, "@"), PGPASSWORD: SECRET })).code).toBe(0);

    const problems: string[] = [];
    for (const { args, result } of runs) {
      problems.push(...leaks(`li ${args.join(" ")}: stdout`, result.stdout), ...leaks(`li ${args.join(" ")}: stderr`, result.stderr));
    }
    // The handler's envelope (stdin) and its argv; the leg's own output is in its run directory.
    for (const file of filesUnder(home)) problems.push(...leaks(file.path, file.text));

    // Every stored row of every table of li's schema.
    const client = await connectPg(resolvePgTarget(`postgres://postgres@127.0.0.1:${port}/${db.name}?sslmode=disable&search_path=li_pw`, {}));
    toClose.push(() => client.close());
    const tables = (await client.sql`SELECT tablename FROM pg_tables WHERE schemaname = 'li_pw' ORDER BY tablename`).map((r: { tablename: string }) => r.tablename);
    expect(tables).toContain("sessions");
    let rows = 0;
    for (const table of tables) {
      const all = await client.sql.unsafe(`SELECT * FROM "${table}"`);
      rows += all.length;
      problems.push(...leaks(`table ${table}`, JSON.stringify(all)));
    }
    expect(rows).toBeGreaterThan(20);
    expect(runs.length).toBeGreaterThan(30);
    expect(problems).toEqual([]);
  }, 180_000);
});
