// Claimers racing as separate processes (§9.5): one run per handler per event, and a dead claimer replaced.
import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { killGroup, probeProcess } from "../../src/legs/proc.ts";
import { deliverOnce } from "../../src/notify/deliver.ts";
import { complete, HOST, notifyWorld, RECORD, recorded, runningSession, standing } from "./helpers.ts";

const WORKER = join(import.meta.dir, "workers/notify-worker.ts");

function worker(args: string[]) {
  return Bun.spawn([process.execPath, WORKER, ...args], { stdout: "pipe", stderr: "pipe" });
}

async function finish(proc: ReturnType<typeof worker>) {
  const [out, err, code] = await Promise.all([new Response(proc.stdout as ReadableStream).text(), new Response(proc.stderr as ReadableStream).text(), proc.exited]);
  if (code !== 0) throw new Error(`worker failed (${code}): ${err}`);
  return JSON.parse(out) as { delivered: number; skipped: number };
}

describe("racing claimers (real processes)", () => {
  test("a pusher and two deliverers racing run each handler once per event", async () => {
    const w = notifyWorld();
    const { ledger } = w;
    // Slow handlers, so the racers overlap while a claim is held.
    await standing(ledger, "a", [RECORD, "--sleep=0.2", w.out("a")]);
    await standing(ledger, "b", [RECORD, "--sleep=0.2", w.out("b")]);
    const events: string[] = [];
    for (const id of ["s1", "s2", "s3", "s4"]) {
      await runningSession(ledger, id);
      const outcome = await ledger.transition("session", id, complete());
      if (outcome.result === "applied") events.push(outcome.transition.transitionId);
    }
    const start = w.out("start");
    const racers = [
      worker([w.dbPath, "push", HOST, start, events[0]!]),
      worker([w.dbPath, "deliver", HOST, start]),
      worker([w.dbPath, "deliver", HOST, start]),
      worker([w.dbPath, "push", HOST, start, events[3]!]),
    ];
    await Bun.sleep(300); // let every racer open the ledger and wait at the start line
    writeFileSync(start, "go");
    const results = await Promise.all(racers.map(finish));

    expect(results.reduce((n, r) => n + r.delivered, 0)).toBe(8);
    for (const handler of ["a", "b"]) {
      const seen = recorded(w.out(handler)).map((line) => line.split(" ")[0]);
      expect(seen.sort()).toEqual([...events].sort());
    }
    expect(w.sql("SELECT state, COUNT(*) AS n FROM terminal_deliveries GROUP BY state")).toEqual([{ state: "acked", n: 8 }]);
  }, 30_000);

  for (const [who, roles] of [
    ["a pusher and a deliverer", ["push", "deliver"]],
    ["two deliverers", ["deliver", "deliver"]],
  ] as const) {
    test(`${who} racing run each handler once per event`, async () => {
      const w = notifyWorld();
      const { ledger } = w;
      await standing(ledger, "a", [RECORD, "--sleep=0.2", w.out("a")]);
      await standing(ledger, "b", [RECORD, "--sleep=0.2", w.out("b")]);
      await runningSession(ledger, "s1");
      const outcome = await ledger.transition("session", "s1", complete());
      if (outcome.result !== "applied") throw new Error("not applied");
      const event = outcome.transition.transitionId;
      const start = w.out("start");
      const racers = roles.map((role) => worker([w.dbPath, role, HOST, start, ...(role === "push" ? [event] : [])]));
      await Bun.sleep(300); // let both racers open the ledger and wait at the start line
      writeFileSync(start, "go");
      const results = await Promise.all(racers.map(finish));

      expect(results.reduce((n, r) => n + r.delivered, 0)).toBe(2);
      expect(recorded(w.out("a")).map((line) => line.split(" ")[0])).toEqual([event]);
      expect(recorded(w.out("b")).map((line) => line.split(" ")[0])).toEqual([event]);
      expect(w.sql("SELECT consumer, state, attempts FROM terminal_deliveries ORDER BY consumer")).toEqual([
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
    const start = w.out("start");
    writeFileSync(start, "go");
    const pusher = worker([w.dbPath, "push", HOST, start, outcome.transition.transitionId]);
    while (!existsSync(out)) await Bun.sleep(10);
    pusher.kill("SIGKILL");
    await pusher.exited;
    const firstPid = Number(readFileSync(out, "utf8").trim());
    try {
      expect(w.sql("SELECT state, attempts FROM terminal_deliveries")).toEqual([{ state: "claimed", attempts: 1 }]);
      // The dead pusher's claim has not expired: nobody else runs the handler.
      w.clock.set(Date.now() / 1000);
      expect(await deliverOnce(ledger, { hostId: HOST })).toMatchObject({ delivered: 0, failed: 0, outcomes: [] });
      expect(readFileSync(out, "utf8").trim().split("\n")).toHaveLength(1);

      // Past the claim (budget 10 s + margin 5 s, by the ledger's clock) a deliverer takes it over.
      writeFileSync(`${out}.release`, "");
      w.clock.advance(16);
      expect(await deliverOnce(ledger, { hostId: HOST })).toMatchObject({ delivered: 1 });
      expect(w.sql("SELECT state, attempts FROM terminal_deliveries")).toEqual([{ state: "acked", attempts: 2 }]);
      w.clock.advance(3600);
      expect((await deliverOnce(ledger, { hostId: HOST })).outcomes).toEqual([]);
      expect(readFileSync(out, "utf8").trim().split("\n")).toHaveLength(2);
    } finally {
      // The orphaned first run is in its own process group: end it.
      if (probeProcess(firstPid, null) === "alive") killGroup(firstPid, "SIGKILL");
    }
  }, 30_000);
});
