import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { tempDir, tempLedger } from "../helpers/ledger.ts";
import { ledgerRows } from "../helpers/ledger-rows.ts";
import { assertEachOverlapped, runRace, type Interval } from "../helpers/race.ts";
import { overlapMs } from "../helpers/until.ts";

const BUN = process.execPath;
const worker = (name: string) => join(import.meta.dir, "../helpers/workers", name);
// process.env carries the suite's backend (test/helpers/backends.ts) to the workers.
const spawnWorker = (args: string[]) => Bun.spawn([BUN, ...args], { env: process.env, stdout: "pipe", stderr: "pipe" });

describe("compare-and-set with real processes", () => {
  test("two processes racing the same guarded write 200 rounds: exactly one winner per round", async () => {
    const t = tempLedger();
    const ids: string[] = [];
    for (let i = 0; i < 200; i++) ids.push((await t.ledger.createEntity("invocation")).id);
    t.ledger.close();
    const idsFile = join(t.home, "ids.txt");
    await Bun.write(idsFile, ids.join("\n"));
    const raceDir = tempDir("li-race-");
    const home = t.liHome;
    const racers = ["completed", "failed"].map((status) => spawnWorker([worker("race-writer.ts"), home, idsFile, raceDir, status]));
    await runRace(raceDir, racers);
    const outputs = await Promise.all(racers.map(async (p) => JSON.parse(await new Response(p.stdout).text()) as Interval & { wins: string[] }));
    expect(await Promise.all(racers.map((p) => p.exited))).toEqual([0, 0]);
    // Held after their first round until both had entered, the writers' intervals overlap: they raced.
    expect(overlapMs(outputs)).toBeGreaterThan(0);
    const [a, b] = outputs.map((o) => o.wins) as [string[], string[]];
    expect(a.length + b.length).toBe(200);
    expect(a.filter((id) => b.includes(id))).toEqual([]);
    const rows = t.rows();
    const counts = await rows.all<{ status: string; n: number }>("SELECT status, COUNT(*) AS n FROM invocations GROUP BY status ORDER BY status");
    expect(counts.reduce((s, c) => s + c.n, 0)).toBe(200);
    expect(counts.find((c) => c.status === "running")).toBeUndefined();
    // One terminal history row per invocation, never two.
    const doubled = await rows.all("SELECT entity_id FROM status_transitions WHERE previous_status = 'running' GROUP BY entity_id HAVING COUNT(*) > 1");
    expect(doubled).toEqual([]);
    expect(await rows.historyProblems()).toEqual([]);
  }, 120_000);

  test("8 processes opening one fresh database at the same moment all succeed", async () => {
    // Nothing can hold a contender inside li's open, so a start line cannot guarantee the opens overlap.
    // Every attempt must be correct; the race must be proven (every open overlapped another's) in one of
    // at most three attempts, or the test fails.
    const unproven: string[] = [];
    for (let attempt = 1; attempt <= 3; attempt++) {
      const home = join(tempDir("li-fresh-"), "home");
      const raceDir = tempDir("li-race-");
      const procs = Array.from({ length: 8 }, () => spawnWorker([worker("open-fresh.ts"), home, raceDir]));
      await runRace(raceDir, procs);
      const codes = await Promise.all(procs.map((p) => p.exited));
      const errors = await Promise.all(procs.map((p) => new Response(p.stderr).text()));
      expect({ codes, errors: errors.filter(Boolean) }).toEqual({ codes: Array(8).fill(0), errors: [] });
      const rows = ledgerRows(home);
      expect(await rows.get("SELECT COUNT(*) AS n FROM teams")).toEqual({ n: 8 });
      expect(await rows.historyProblems()).toEqual([]);
      await rows.close();
      const opens = await Promise.all(procs.map(async (p) => JSON.parse(await new Response(p.stdout).text()) as Interval));
      try {
        assertEachOverlapped(opens);
        return;
      } catch (error) {
        unproven.push(`attempt ${attempt}: ${(error as Error).message}`);
      }
    }
    throw new Error(`the opens never raced:\n${unproven.join("\n")}`);
  }, 120_000);
});
