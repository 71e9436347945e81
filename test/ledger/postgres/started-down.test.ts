// §17 on PostgreSQL: commands started while the server is down (pg_ctl stop: connection refused) wait
// for it instead of exiting 78 at once — li wait until its --timeout, read and maintenance commands for
// their --ledger-retry, li watch until it answers. The server is started again only once every command
// was refused and said so (its one note), whatever the machine's pace. In a file of its own: stopping the
// server stops every database of this test process's cluster.

import { afterAll, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { LI_BINARY, liEnv } from "../../helpers/cli.ts";
import { describePostgres, restartPostgresServer, usePostgresDatabase } from "../../helpers/postgres.ts";
import { pgTestLedger, type PgTestLedger } from "../../helpers/pg-ledger.ts";
import { killedAfterEachTest, NeverHappens, until } from "../../helpers/until.ts";
import { detachedLeg, expectInvariants } from "../../legs/late-fixtures.ts";
import { RECORD, recorded } from "../../notify/helpers.ts";

describePostgres("commands started while the PostgreSQL server is down (§17)", () => {
  const db = usePostgresDatabase();
  const opened: PgTestLedger[] = [];
  const leftRunning = killedAfterEachTest();
  afterAll(async () => {
    for (const o of opened.splice(0)) await o.close();
  });

  const world = async () => {
    const l = await pgTestLedger(db);
    opened.push(l);
    /** li `argv` in the background on this ledger. */
    const start = (argv: string[]) => {
      const run = background(argv, liEnv(l.home, l.env));
      leftRunning.push({ pid: run.proc.pid, group: false });
      return { ...run, argv };
    };
    return { l, start };
  };

  /** Waits until `run` was refused by the stopped server and said it waits (`said`), and is still running. */
  const untilRefused = (run: { seen: Seen; argv: string[] }, said: RegExp | ((seen: Seen) => boolean)) =>
    until(`li ${run.argv.join(" ")} to be refused by the stopped server and wait`, () => {
      if (run.seen.exited) throw new NeverHappens(`li ${run.argv.join(" ")} exited while the server was down:\n${run.seen.stderr}`);
      return typeof said === "function" ? said(run.seen) : said.test(run.seen.stderr);
    });
  /** li's one note: the ledger, why it cannot be reached, and that the command goes on trying. */
  const NOTE = /^li: ledger postgres:\/\/127\.0\.0\.1:\d+\/\S+: connection refused \(is the server running\?\) \(ERR_POSTGRES_CONNECTION_REFUSED\); (trying again for up to 1m00s|still waiting \(looking again when it answers, until --timeout\))$/;

  test("li wait, li ls, li show, li logs -f and li kill started while the server is down each say so once, wait for it, and succeed once it is back: li wait prints the real line", async () => {
    const { l, start } = await world();
    const rows = l.rows();
    const leg = await detachedLeg(rows, liEnv(l.home, l.env), leftRunning);
    let runs: ReturnType<typeof start>[] = [];
    await restartPostgresServer(async () => {
      runs = [
        start(["wait", "--timeout", "20", leg.id]),
        start(["ls", "--ledger-retry", "60s"]),
        start(["show", leg.id, "--ledger-retry", "60s"]),
        start(["logs", "-f", leg.id, "--ledger-retry", "60s"]),
        // A grace the leg cannot outlast on a loaded machine: it ends itself (manual_kill), never force-killed.
        start(["kill", leg.id, "--grace", "60", "--ledger-retry", "60s"]),
      ];
      for (const run of runs) await untilRefused(run, (seen) => seen.stderr.split("\n").some((line) => NOTE.test(line)));
    });
    const [wait, ls, show, logs, kill] = runs;
    // li kill ends the leg once the server is back; li wait and li logs -f see it end.
    expect(await kill!.done).toBe(0);
    expect(await wait!.done).toBe(1);
    expect(wait!.seen.stdout).toMatch(new RegExp(`^${leg.id}\\tstatus=cancelled\\treason=run\\.cancelled\\.manual_kill\\t`));
    expect(await ls!.done).toBe(0);
    expect(ls!.seen.stdout).toContain(leg.id.slice(0, 8));
    expect(await show!.done).toBe(0);
    expect(show!.seen.stdout).toContain(leg.id);
    expect(await logs!.done).toBe(1); // -f exits like li wait: the leg was cancelled
    for (const run of runs) {
      const said = run.seen.stderr.trimEnd().split("\n");
      // One note, and nothing else on stderr but li kill's own report.
      expect({ argv: run.argv, said: said.filter((line) => !line.startsWith("li: killed") && !line.startsWith("li: terminated")).map((line) => NOTE.test(line)) }).toEqual({ argv: run.argv, said: [true] });
      // Bun's driver says nothing of its own (li's one note is enough).
      expect(run.seen.stderr).not.toContain("bun:sql");
    }
    await expectInvariants(rows);
  });

  test("li watch started while the server is down logs ledger_down, starts once the server is back, and delivers a notice owed after the restart", async () => {
    const { l, start } = await world();
    const notices = path.join(fs.mkdtempSync(path.join(l.home, "scratch-")), "notices");
    const env = liEnv(l.home, l.env);
    const added = Bun.spawnSync([LI_BINARY, "events", "handlers", "add", "rec", "--kind", "session", "--", RECORD, notices], { env });
    expect(added.exitCode).toBe(0);
    const rows = l.rows();
    const leg = await detachedLeg(rows, env, leftRunning);
    let watcher: ReturnType<typeof start> | undefined;
    const logged = () => watcher!.seen.stdout.split("\n").filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>);
    await restartPostgresServer(async () => {
      watcher = start(["watch", "--log-format", "json"]);
      await untilRefused(watcher, () => logged().some((e) => e.action === "ledger_down"));
    });
    await until("li watch to start", () => {
      if (watcher!.seen.exited) throw new NeverHappens(`li watch exited: ${watcher!.seen.stderr}`);
      return logged().some((e) => e.action === "start");
    });
    // Owed after the restart: the leg ends now, and this host's standing handler is the watcher's to run.
    const kill = Bun.spawnSync([LI_BINARY, "kill", leg.id], { env });
    expect(kill.exitCode).toBe(0);
    await until("li watch to deliver the notice", () => recorded(notices).length > 0);
    watcher!.proc.kill("SIGTERM");
    expect(await watcher!.done).toBe(0);
    expect(recorded(notices).map((line) => line.split(" ").slice(1, 4).join(" "))).toEqual([`cancelled session ${leg.id}`]);
    const actions = logged().map((e) => e.action);
    expect(actions.filter((a) => a === "ledger_down")).toHaveLength(1);
    expect(actions.indexOf("ledger_down")).toBeLessThan(actions.indexOf("start"));
    expect(logged().find((e) => e.action === "ledger_down")).toMatchObject({ during: "start", message: expect.stringMatching(/^ledger postgres:\/\/127\.0\.0\.1:\d+\/\S+: /) });
    expect(watcher!.seen.stderr).not.toContain("bun:sql");
    await expectInvariants(rows);
  });
});

interface Seen {
  stdout: string;
  stderr: string;
  exited: boolean;
}

/** li in the background, its stdout and stderr readable while it runs. */
function background(argv: string[], env: Record<string, string>) {
  const proc = Bun.spawn([LI_BINARY, ...argv], { env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const seen: Seen = { stdout: "", stderr: "", exited: false };
  const pump = async (stream: ReadableStream<Uint8Array>, key: "stdout" | "stderr") => {
    const decoder = new TextDecoder();
    for await (const chunk of stream) seen[key] += decoder.decode(chunk, { stream: true });
  };
  const done = Promise.all([pump(proc.stdout, "stdout"), pump(proc.stderr, "stderr"), proc.exited]).then(([, , code]) => {
    seen.exited = true;
    return code;
  });
  return { proc, seen, done };
}
