import { describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { join, resolve } from "node:path";
import { openLedger } from "../../src/ledger/open.ts";
import { resolvePaths } from "../../src/ledger/location.ts";
import { liEnv } from "../helpers/cli.ts";
import { tempDir } from "../helpers/ledger.ts";
import { RECORD, recorded } from "../notify/helpers.ts";

// Runs li from source (no build needed), as a separate process, the way a user would.
const CLI = resolve(import.meta.dir, "../../src/cli.ts");

async function li(home: string, args: string[]) {
  const proc = Bun.spawn([process.execPath, CLI, ...args], { env: liEnv(home), stdout: "pipe", stderr: "pipe", stdin: "ignore" });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr };
}

function rows(home: string, query: string): unknown[] {
  const db = new Database(join(home, "state.db"));
  try {
    return db.query(query).all();
  } finally {
    db.close();
  }
}

describe("li events", () => {
  test("a consumer lists what set-status made terminal until it acknowledges it; parallel acks make one row", async () => {
    const home = tempDir();
    expect((await li(home, ["events", "consumers", "add", "ci"])).code).toBe(0);
    expect((await li(home, ["state", "create", "invocation", "--id", "inv-1"])).code).toBe(0);
    const set = await li(home, ["state", "set-status", "invocation", "inv-1", "--status", "completed", "--reason", "run.completed.ok", "--json"]);
    expect(set.code).toBe(0);
    const eventId = JSON.parse(set.stdout).event_id as string;

    const listed = await li(home, ["events", "--consumer", "ci", "--json"]);
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout)).toMatchObject([{ event_id: eventId, entity: { kind: "invocation", id: "inv-1" }, previous_status: "running", terminal_status: "completed" }]);

    const acks = await Promise.all(Array.from({ length: 4 }, () => li(home, ["events", "ack", "--consumer", "ci", eventId])));
    expect(acks.map((a) => a.code)).toEqual([0, 0, 0, 0]);
    expect(rows(home, "SELECT transition_id, consumer, state FROM terminal_deliveries")).toEqual([{ transition_id: eventId, consumer: "ci", state: "acked" }]);
    expect(JSON.parse((await li(home, ["events", "--consumer", "ci", "--json"])).stdout)).toEqual([]);

    const retired = await li(home, ["events", "consumers", "retire", "ci", "--json"]);
    expect(JSON.parse(retired.stdout)).toEqual({ name: "ci", released: 0 });
    expect((await li(home, ["events", "--consumer", "ci"])).code).toBe(2);
  }, 30_000);

  test("standing handlers: add with repeated --kind and --id, set-status pushes them, ls and rm", async () => {
    const home = tempDir();
    const out = join(home, "handled");
    const add = await li(home, ["events", "handlers", "add", "done", "--kind", "invocation", "--kind", "schedule_run", "--id", "inv-1", "--id", "inv-2", "--json", "--", RECORD, out, "{status}"]);
    expect(add.code).toBe(0);
    expect(JSON.parse(add.stdout)).toMatchObject({ name: "done", consumer: "handler:done", kinds: ["invocation", "schedule_run"], ids: ["inv-1", "inv-2"], argv: [RECORD, out, "{status}"], this_host: true });

    for (const id of ["inv-1", "inv-3"]) {
      await li(home, ["state", "create", "invocation", "--id", id]);
      expect((await li(home, ["state", "set-status", "invocation", id, "--status", "failed", "--reason", "run.failed.exit_nonzero"])).code).toBe(0);
    }
    expect(recorded(out).map((l) => l.split(" ").slice(1).join(" "))).toEqual(["failed invocation inv-1 failed"]);

    const ls = await li(home, ["events", "handlers", "ls", "--json"]);
    expect(JSON.parse(ls.stdout)).toHaveLength(1);
    const text = await li(home, ["events", "handlers", "ls"]);
    expect(text.stdout).toContain("this host");
    expect(text.stdout).not.toContain(out); // argument values are previewed, never printed in full

    expect((await li(home, ["events", "handlers", "rm", "done"])).code).toBe(0);
    expect(JSON.parse((await li(home, ["events", "handlers", "ls", "--json"])).stdout)).toEqual([]);
    expect((await li(home, ["events", "handlers", "rm", "done"])).code).toBe(2);
  }, 30_000);

  test("li events deliver delivers what no push delivered, once", async () => {
    const home = tempDir();
    const out = join(home, "handled");
    expect((await li(home, ["events", "handlers", "add", "all", "--", RECORD, out])).code).toBe(0);
    // Commit without pushing, as a leg killed between its commit and its push would.
    const ledger = openLedger(resolvePaths({ env: { LI_HOME: home } }), { create: false });
    await ledger.createEntity("invocation", { id: "inv-1" });
    await ledger.transition("invocation", "inv-1", { newStatus: "timed_out", reasonCode: "run.timed_out.deadline" });
    ledger.close();
    expect(recorded(out)).toEqual([]);

    const first = await li(home, ["events", "deliver", "--json"]);
    expect(first.code).toBe(0);
    expect(JSON.parse(first.stdout)).toMatchObject({ delivered: 1, failed: 0, dead: 0, skipped_claimed: 0 });
    const second = await li(home, ["events", "deliver"]);
    expect(second.stdout).toBe("delivered 0, failed 0, dead 0, skipped (claimed elsewhere) 0\n");
    expect(recorded(out)).toHaveLength(1);
  }, 30_000);

  test("--dead lists deliveries that used every attempt", async () => {
    const home = tempDir();
    await li(home, ["events", "consumers", "add", "ci"]);
    await li(home, ["state", "create", "invocation", "--id", "inv-1"]);
    await li(home, ["state", "set-status", "invocation", "inv-1", "--status", "failed", "--reason", "run.failed.exit_nonzero"]);
    const db = new Database(join(home, "state.db"));
    db.run("INSERT INTO terminal_deliveries (transition_id, consumer, state, attempts, last_error, created_at, updated_at) SELECT id, 'handler:x', 'dead', 5, 'exited 3', 0, 0 FROM status_transitions WHERE terminal_event = 1");
    db.close();
    const dead = await li(home, ["events", "--dead", "--json"]);
    expect(JSON.parse(dead.stdout)).toMatchObject([{ consumer: "handler:x", entity: { kind: "invocation", id: "inv-1" }, attempts: 5, last_error: "exited 3" }]);
  }, 30_000);

  test("usage errors name the flag or word and exit 2", async () => {
    const home = tempDir();
    const cases: [string[], string][] = [
      [["events"], "--consumer"],
      [["events", "--dead", "--kind", "session"], "--kind"],
      [["events", "--bogus"], "--bogus"],
      [["events", "ack", "x"], "--consumer"],
      [["events", "frobnicate"], "frobnicate"],
      [["events", "handlers", "add", "h", "--kind", "team", "--", "true"], "--kind"],
      [["events", "handlers", "add", "h"], "--"],
      [["events", "consumers", "add", "handler:x"], "handler:"],
    ];
    for (const [args, named] of cases) {
      const result = await li(home, args);
      expect({ args, code: result.code }).toEqual({ args, code: 2 });
      expect(result.stderr).toContain(named);
    }
  }, 30_000);
});
