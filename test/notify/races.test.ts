import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
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
});
