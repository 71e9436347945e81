import { describe, expect, test } from "bun:test";
import { join, resolve } from "node:path";
import { openLedger } from "../../src/ledger/open.ts";
import { pathsForHome } from "../helpers/backends.ts";
import { li as liBinary, liEnv } from "../helpers/cli.ts";
import { tempDir } from "../helpers/ledger.ts";
import { ledgerRows } from "../helpers/ledger-rows.ts";
import { commandPaths } from "../../src/cli/tree.ts";
import { RECORD, recorded } from "../notify/helpers.ts";

// Runs li from source (no build needed), as a separate process, the way a user would.
const CLI = resolve(import.meta.dir, "../../src/cli.ts");

async function li(home: string, args: string[]) {
  const proc = Bun.spawn([process.execPath, CLI, ...args], { env: liEnv(home), stdout: "pipe", stderr: "pipe", stdin: "ignore" });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr };
}

describe("li events", () => {
  test("a consumer lists what set-status made terminal until it acknowledges it; parallel acks make one row", async () => {
    const home = tempDir();
    expect((await li(home, ["events", "consumers", "add", "ci"])).code).toBe(0);
    expect((await li(home, ["state", "create", "invocation", "--id", "inv-1"])).code).toBe(0);
    const set = await li(home, ["state", "set-status", "invocation", "inv-1", "--status", "completed", "--reason", "run.completed.ok", "--json"]);
    expect(set.code).toBe(0);
    const eventId = JSON.parse(set.stdout).event_id as string;

    // `li events --consumer NAME` is the spelling SPEC §9.6 promises; `li events owed` says the same.
    const listed = await li(home, ["events", "--consumer", "ci", "--json"]);
    expect((await li(home, ["events", "owed", "--consumer=ci", "--json"])).stdout).toBe(listed.stdout);
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout)).toMatchObject([{ event_id: eventId, entity: { kind: "invocation", id: "inv-1" }, previous_status: "running", terminal_status: "completed" }]);

    const acks = await Promise.all(Array.from({ length: 4 }, () => li(home, ["events", "ack", "--consumer", "ci", eventId])));
    expect(acks.map((a) => a.code)).toEqual([0, 0, 0, 0]);
    expect(await ledgerRows(home).all("SELECT transition_id, consumer, state FROM terminal_deliveries")).toEqual([{ transition_id: eventId, consumer: "ci", state: "acked" }]);
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
    const ledger = openLedger(pathsForHome(home), { create: false });
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
    await ledgerRows(home).run("INSERT INTO terminal_deliveries (transition_id, consumer, state, attempts, last_error, created_at, updated_at) SELECT id, 'handler:x', 'dead', 5, 'exited 3', 0, 0 FROM status_transitions WHERE terminal_event = 1");
    const dead = await li(home, ["events", "--dead", "--json"]);
    expect(JSON.parse(dead.stdout)).toMatchObject([{ consumer: "handler:x", entity: { kind: "invocation", id: "inv-1" }, attempts: 5, last_error: "exited 3" }]);
    expect((await li(home, ["events", "dead", "--json"])).stdout).toBe(dead.stdout);
  }, 30_000);

  test("usage errors name the flag or word and exit 2", async () => {
    const home = tempDir();
    const cases: [string[], string][] = [
      [["events", "--dead", "--kind", "session"], "--kind"],
      [["events", "--bogus"], "--bogus"],
      [["events", "ack", "x"], "--consumer"],
      [["events", "--consumer", "ci", "--dead"], "--consumer"],
      [["events", "owed"], "--consumer"],
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

  test("an unknown handler or registration as --consumer points at the handlers, never at a 'consumers add' li would refuse", async () => {
    const home = tempDir();
    expect((await li(home, ["events", "consumers", "add", "ci"])).code).toBe(0);
    for (const name of ["handler:nope", "cb:nope"]) {
      const r = await li(home, ["events", "owed", "--consumer", name]);
      expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 2, stderr: `li: --consumer: '${name}' is not registered (no handler or leg registration has that name: li events handlers ls)\n` });
    }
    const plain = await li(home, ["events", "owed", "--consumer", "nobody"]);
    expect(plain.stderr).toBe("li: --consumer: 'nobody' is not registered (li events consumers add nobody)\n");
  }, 30_000);
});

/** Each `li events` subcommand: a refused call, then its happy path; run in this order on one ledger. */
interface Case {
  path: string[];
  bad: { args: string[]; names: string };
  happy: { args: string[]; check: (r: { code: number; stdout: string; stderr: string }) => void };
}

describe("every li events subcommand, from the compiled binary", () => {
  const ev = (...words: string[]) => ["events", ...words];
  const CASES: Case[] = [
    {
      path: ev("consumers", "add"),
      bad: { args: ev("consumers", "add", "handler:x"), names: "handler:" },
      happy: { args: ev("consumers", "add", "ops", "--json"), check: (r) => expect(JSON.parse(r.stdout)).toMatchObject({ name: "ops", created: true }) },
    },
    {
      path: ev("owed"),
      bad: { args: ev("owed", "--consumer=nobody"), names: "nobody" },
      happy: { args: ev("owed", "--consumer=ci", "--json"), check: (r) => expect(JSON.parse(r.stdout)).toMatchObject([{ entity: { kind: "invocation", id: "inv-1" }, terminal_status: "completed" }]) },
    },
    {
      path: ev("ack"),
      bad: { args: ev("ack", "--consumer=ci", "not-an-event"), names: "not-an-event" },
      happy: { args: ev("ack", "--consumer=ci", "--json", "EVENT"), check: (r) => expect(JSON.parse(r.stdout)).toEqual({ consumer: "ci", acked: 1, already: 0 }) },
    },
    {
      path: ev("dead"),
      bad: { args: ev("dead", "extra"), names: "extra" },
      happy: { args: ev("dead", "--json"), check: (r) => expect(JSON.parse(r.stdout)).toEqual([]) },
    },
    {
      path: ev("handlers", "add"),
      bad: { args: [...ev("handlers", "add", "h", "--kind=team", "--"), RECORD, "x"], names: "--kind" },
      happy: { args: [...ev("handlers", "add", "h", "--kind=invocation", "--json", "--"), RECORD, "OUT"], check: (r) => expect(JSON.parse(r.stdout)).toMatchObject({ name: "h", kinds: ["invocation"], this_host: true }) },
    },
    {
      path: ev("handlers", "ls"),
      bad: { args: ev("handlers", "ls", "extra"), names: "extra" },
      happy: { args: ev("handlers", "ls", "--json"), check: (r) => expect(JSON.parse(r.stdout)).toMatchObject([{ name: "h" }]) },
    },
    {
      path: ev("deliver"),
      bad: { args: ev("deliver", "extra"), names: "extra" },
      // The handler was added after the only terminal event: nothing is owed to it.
      happy: { args: ev("deliver", "--json"), check: (r) => expect(JSON.parse(r.stdout)).toMatchObject({ delivered: 0, failed: 0, dead: 0 }) },
    },
    {
      path: ev("handlers", "rm"),
      bad: { args: ev("handlers", "rm", "nope"), names: "nope" },
      happy: { args: ev("handlers", "rm", "h", "--json"), check: (r) => expect(JSON.parse(r.stdout)).toEqual({ name: "h", released: 0 }) },
    },
    {
      path: ev("consumers", "retire"),
      bad: { args: ev("consumers", "retire", "nobody"), names: "nobody" },
      happy: { args: ev("consumers", "retire", "ops", "--json"), check: (r) => expect(JSON.parse(r.stdout)).toEqual({ name: "ops", released: 0 }) },
    },
  ];

  test("the cases cover every subcommand in the tree", () => {
    expect(CASES.map((c) => c.path.join(" ")).sort()).toEqual(commandPaths().filter((p) => p[0] === "events").map((p) => p.join(" ")).sort());
  });

  test("each: --help, an unknown flag and a bad argument (exit 2, ledger unchanged), then its happy path", async () => {
    const home = tempDir();
    const db = ledgerRows(home);
    const out = join(home, "handled");
    const run = (args: string[]) => liBinary(args, { home });
    expect((await run(ev("consumers", "add", "ci"))).code).toBe(0);
    expect((await run(["state", "create", "invocation", "--id=inv-1"])).code).toBe(0);
    const set = await run(["state", "set-status", "invocation", "inv-1", "--status=completed", "--reason=run.completed.ok", "--json"]);
    const eventId = JSON.parse(set.stdout).event_id as string;

    for (const c of CASES) {
      const where = `li ${c.path.join(" ")}`;
      const help = await run([...c.path, "--help"]);
      expect({ where, code: help.code, usage: help.stdout.includes(`USAGE: ${where}`) }).toEqual({ where, code: 0, usage: true });

      for (const [args, names] of [[[...c.path, "--bogus"], "--bogus"], [c.bad.args, c.bad.names]] as const) {
        const before = await db.dump();
        const r = await run([...args]);
        expect({ args, code: r.code, stdout: r.stdout, lines: r.stderr.trim().split("\n").length, named: r.stderr.includes(names) }).toEqual({ args, code: 2, stdout: "", lines: 1, named: true });
        expect(await db.dump()).toEqual(before);
      }

      const r = await run(c.happy.args.map((a) => (a === "EVENT" ? eventId : a === "OUT" ? out : a)));
      expect({ where, code: r.code, stderr: r.stderr }).toEqual({ where, code: 0, stderr: "" });
      c.happy.check(r);
    }
  }, 60_000);

  test("a refused write on a machine with no ledger creates none", async () => {
    const home = tempDir();
    for (const args of [ev("consumers", "add", "handler:x"), [...ev("handlers", "add", "h", "--kind=team", "--"), RECORD], ev("handlers", "add", "h")]) {
      expect((await liBinary(args, { home })).code).toBe(2);
    }
    expect(await ledgerRows(home).exists()).toBe(false);
  });
});
