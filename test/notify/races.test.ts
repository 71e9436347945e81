// Claimers racing as separate processes (§9.5): one run per handler per event, and a dead claimer replaced.
import { describe, expect, test } from "bun:test";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { deliverOnce } from "../../src/notify/deliver.ts";
import { assertEachOverlapped, runRace } from "../helpers/race.ts";
import { isAlive, pidFromFile, signalPid } from "../helpers/until.ts";
import { complete, HOST, notifyWorld, RECORD, recorded, runningSession, standing, type NotifyWorld } from "./helpers.ts";

const WORKER = join(import.meta.dir, "workers/notify-worker.ts");

interface RaceResult {
  delivered: number;
  skipped: number;
  enteredAt: number;
  leftAt: number;
}

function worker(args: string[]) {
  // process.env explicitly (Bun.spawn's default is the environment we started with): it carries the
  // owner token, so a handler orphaned by a killed worker is still recognised as ours.
  return Bun.spawn([process.execPath, WORKER, ...args], { env: process.env, stdout: "pipe", stderr: "pipe" });
}

async function finish(proc: ReturnType<typeof worker>): Promise<RaceResult> {
  const [out, err, code] = await Promise.all([new Response(proc.stdout as ReadableStream).text(), new Response(proc.stderr as ReadableStream).text(), proc.exited]);
  if (code !== 0) throw new Error(`worker failed (${code}): ${err}`);
  return JSON.parse(out) as RaceResult;
}

/**
 * Runs the contenders as one race (test/helpers/race.ts). The handlers (started with `--after=<release>`)
 * are held until every contender has entered, so a claim taken by one is still held when the last one
 * enters; the test fails unless every contender's interval overlapped another's.
 */
async function race(raceDir: string, contenders: string[][]): Promise<RaceResult[]> {
  const procs = contenders.map(worker);
  await runRace(raceDir, procs);
  const results = await Promise.all(procs.map(finish));
  assertEachOverlapped(results);
  return results;
}

/** The race directory, and standing handlers a and b held until its release, so the racers overlap while a claim is held. */
async function heldHandlers(w: NotifyWorld): Promise<string> {
  const dir = w.out("race");
  mkdirSync(dir);
  for (const name of ["a", "b"]) await standing(w.ledger, name, [RECORD, `--after=${dir}/release`, w.out(name)]);
  return dir;
}

describe("racing claimers (real processes)", () => {
  test("a pusher and two deliverers racing run each handler once per event", async () => {
    const w = notifyWorld();
    const { ledger } = w;
    const dir = await heldHandlers(w);
    const events: string[] = [];
    for (const id of ["s1", "s2", "s3", "s4"]) {
      await runningSession(ledger, id);
      const outcome = await ledger.transition("session", id, complete());
      if (outcome.result === "applied") events.push(outcome.transition.transitionId);
    }
    const results = await race(dir, [
      [w.liHome, "push", HOST, dir, events[0]!],
      [w.liHome, "deliver", HOST, dir],
      [w.liHome, "deliver", HOST, dir],
      [w.liHome, "push", HOST, dir, events[3]!],
    ]);

    expect(results.reduce((n, r) => n + r.delivered, 0)).toBe(8);
    for (const handler of ["a", "b"]) {
      const seen = recorded(w.out(handler)).map((line) => line.split(" ")[0]);
      expect(seen.sort()).toEqual([...events].sort());
    }
    expect(await w.sql("SELECT state, COUNT(*) AS n FROM terminal_deliveries GROUP BY state")).toEqual([{ state: "acked", n: 8 }]);
  }, 30_000);

  for (const [who, roles] of [
    ["a pusher and a deliverer", ["push", "deliver"]],
    ["two deliverers", ["deliver", "deliver"]],
  ] as const) {
    test(`${who} racing run each handler once per event`, async () => {
      const w = notifyWorld();
      const { ledger } = w;
      const dir = await heldHandlers(w);
      await runningSession(ledger, "s1");
      const outcome = await ledger.transition("session", "s1", complete());
      if (outcome.result !== "applied") throw new Error("not applied");
      const event = outcome.transition.transitionId;
      const results = await race(dir, roles.map((role) => [w.liHome, role, HOST, dir, ...(role === "push" ? [event] : [])]));

      expect(results.reduce((n, r) => n + r.delivered, 0)).toBe(2);
      expect(recorded(w.out("a")).map((line) => line.split(" ")[0])).toEqual([event]);
      expect(recorded(w.out("b")).map((line) => line.split(" ")[0])).toEqual([event]);
      expect(await w.sql("SELECT consumer, state, attempts FROM terminal_deliveries ORDER BY consumer")).toEqual([
        { consumer: "handler:a", state: "acked", attempts: 1 },
        { consumer: "handler:b", state: "acked", attempts: 1 },
      ]);
    }, 30_000);
  }

  test("a pusher killed while its handler runs holds the claim until it expires; then a deliverer replaces it, once", async () => {
    const w = notifyWorld();
    const { ledger } = w;
    // The ledger's clock is the real one here, so the worker's claim (taken by its own clock) is live.
    w.clock.set(Date.now() / 1000);
    const out = w.out("runs");
    // Records its pid; hangs the first time, exits 0 once the release file exists.
    const script = 'echo $$ >> "$0"; [ -f "$0.release" ] || sleep 60';
    await standing(ledger, "h", ["/bin/sh", "-c", script, out]);
    await runningSession(ledger, "s1");
    const outcome = await ledger.transition("session", "s1", complete());
    if (outcome.result !== "applied") throw new Error("not applied");
    const dir = w.out("race");
    mkdirSync(dir);
    writeFileSync(join(dir, "start"), "go");
    const pusher = worker([w.liHome, "push", HOST, dir, outcome.transition.transitionId]);
    // The handler's first line is its pid: once that is whole, the handler runs and holds the claim.
    const firstPid = await pidFromFile(out, "the first handler run's pid");
    pusher.kill("SIGKILL");
    await pusher.exited;
    try {
      expect(await w.sql("SELECT state, attempts FROM terminal_deliveries")).toEqual([{ state: "claimed", attempts: 1 }]);
      // The dead pusher's claim has not expired: nobody else runs the handler.
      w.clock.set(Date.now() / 1000);
      expect(await deliverOnce(ledger, { hostId: HOST })).toMatchObject({ delivered: 0, failed: 0, outcomes: [] });
      expect(readFileSync(out, "utf8").trim().split("\n")).toHaveLength(1);

      // Past the claim (budget 10 s + margin 5 s, by the ledger's clock) a deliverer takes it over.
      writeFileSync(`${out}.release`, "");
      w.clock.advance(16);
      expect(await deliverOnce(ledger, { hostId: HOST })).toMatchObject({ delivered: 1 });
      expect(await w.sql("SELECT state, attempts FROM terminal_deliveries")).toEqual([{ state: "acked", attempts: 2 }]);
      w.clock.advance(3600);
      expect((await deliverOnce(ledger, { hostId: HOST })).outcomes).toEqual([]);
      expect(readFileSync(out, "utf8").trim().split("\n")).toHaveLength(2);
    } finally {
      // The orphaned first run is in its own process group: end it.
      if (isAlive(firstPid)) signalPid(firstPid, "SIGKILL", { group: true, what: "the first handler run" });
    }
  }, 30_000);
});
