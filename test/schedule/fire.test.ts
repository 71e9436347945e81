import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { Ledger } from "../../src/ledger/ledger.ts";
import { ON_TIME_GRACE_SECONDS } from "../../src/schedule/cron.ts";
import { firePass, type FireAction } from "../../src/schedule/fire.ts";
import { addSchedule, setSchedulePaused, validateSchedule } from "../../src/schedule/schedules.ts";
import { scheduledRequest } from "../../src/schedule/schedule-request.ts";
import { queueSubmit } from "../../src/schedule/submit-fire.ts";
import { submitRun } from "../../src/schedule/submit.ts";
import { fakeClock, sequentialIds, tempDir, tempLedger } from "../helpers/ledger.ts";
import { assertEachOverlapped, runRace, type Interval } from "../helpers/race.ts";

const HOUR = 3600;
/** 2027-01-15T00:00:00Z: a whole hour, so "0 * * * *" falls due on it. */
const T0 = Date.parse("2027-01-15T00:00:00Z") / 1000;

async function schedule(ledger: Ledger, name: string, over: { cron?: string; overlap?: string; missed?: string } = {}) {
  return addSchedule(ledger, validateSchedule({ name, cron: over.cron ?? "0 * * * *", timeZone: "UTC", overlap: over.overlap, missed: over.missed, queue: "nightly" }), JSON.stringify(scheduledRequest({ argv: ["true"], cwd: undefined, timeout: undefined, passEnv: [], workdir: "/", env: {} })));
}

function world() {
  const clock = fakeClock(T0 - 30);
  const t = tempLedger({ now: clock.now, newId: sequentialIds("run") });
  const pass = (hostId = "host-a") => firePass(t.ledger, clock.now(), { hostId, submit: queueSubmit(t.ledger) });
  const fires = () => t.rows().all<{ due_at: number; outcome: string; run_status: string; reason: string }>(
    `SELECT f.due_at, f.outcome, r.status AS run_status, r.status_reason_code AS reason
       FROM schedule_fires f JOIN schedule_runs r ON r.id = f.run_id ORDER BY f.due_at`,
  );
  return { ...t, clock, pass, fires };
}

describe("the cron pass (injected clock)", () => {
  test("a due time fires once: a queued run with schedule.fired.due, and nothing more until the next", async () => {
    const w = world();
    await schedule(w.ledger, "hourly", { overlap: "queue" });
    expect((await w.pass()).actions).toEqual([]); // not due yet (T0 - 30)
    w.clock.set(T0 + 2);
    const first = await w.pass();
    expect(first.actions.map((a) => [a.due_at, a.outcome])).toEqual([[T0, "fired"]]);
    w.clock.set(T0 + 30);
    expect((await w.pass()).actions).toEqual([]);
    w.clock.set(T0 + HOUR);
    expect((await w.pass()).actions.map((a) => a.due_at)).toEqual([T0 + HOUR]);
    expect(await w.fires()).toEqual([
      { due_at: T0, outcome: "fired", run_status: "queued", reason: "schedule.fired.due" },
      { due_at: T0 + HOUR, outcome: "fired", run_status: "queued", reason: "schedule.fired.due" },
    ]);
  });

  test("missed fires after a stopped watcher, --missed skip: each recorded skipped, none run", async () => {
    const w = world();
    await schedule(w.ledger, "hourly", { overlap: "queue" });
    w.clock.set(T0 + 1);
    await w.pass();
    // The watcher stops for three hours; it comes back two minutes after the third due time.
    w.clock.set(T0 + 3 * HOUR + 2 * ON_TIME_GRACE_SECONDS);
    const back = await w.pass();
    expect(back.actions.map((a) => [a.due_at - T0, a.outcome])).toEqual([
      [HOUR, "skipped_missed"],
      [2 * HOUR, "skipped_missed"],
      [3 * HOUR, "skipped_missed"],
    ]);
    const fires = await w.fires();
    expect(fires.slice(1).map((f) => [f.run_status, f.reason])).toEqual(Array(3).fill(["skipped", "schedule.skipped.missed_fire"]));
    // The cursor moved past now: the next pass decides nothing until T0 + 4h.
    expect((await w.pass()).actions).toEqual([]);
  });

  test("missed fires after a stopped watcher, --missed latest: the newest runs, the older ones are recorded skipped", async () => {
    const w = world();
    await schedule(w.ledger, "hourly", { missed: "latest", overlap: "queue" });
    w.clock.set(T0 + 3 * HOUR + 2 * ON_TIME_GRACE_SECONDS);
    const back = await w.pass();
    expect(back.actions.map((a) => [a.due_at - T0, a.outcome])).toEqual([
      [0, "skipped_missed"],
      [HOUR, "skipped_missed"],
      [2 * HOUR, "skipped_missed"],
      [3 * HOUR, "fired"],
    ]);
    expect((await w.fires()).map((f) => f.run_status)).toEqual(["skipped", "skipped", "skipped", "queued"]);
  });

  test("--overlap skip: a due time while the previous run is still queued is recorded skipped; once it ended, the next fires", async () => {
    const w = world();
    await schedule(w.ledger, "hourly", { overlap: "skip" });
    w.clock.set(T0 + 1);
    const [first] = (await w.pass()).actions as [FireAction];
    w.clock.set(T0 + HOUR + 1);
    expect((await w.pass()).actions.map((a) => a.outcome)).toEqual(["skipped_overlap"]);
    // The first run ends; the next due time fires again.
    await w.ledger.updateStatus("schedule_run", first.run_id, { newStatus: "cancelled", reasonCode: "schedule.cancelled.operator" });
    w.clock.set(T0 + 2 * HOUR + 1);
    expect((await w.pass()).actions.map((a) => a.outcome)).toEqual(["fired"]);
    expect((await w.fires()).map((f) => [f.outcome, f.run_status, f.reason])).toEqual([
      ["fired", "cancelled", "schedule.cancelled.operator"],
      ["skipped_overlap", "skipped", "schedule.skipped.overlap"],
      ["fired", "queued", "schedule.fired.due"],
    ]);
  });

  test("--overlap skip follows the retry chain: a failed run whose retry is queued still overlaps", async () => {
    const w = world();
    await schedule(w.ledger, "hourly", { overlap: "skip" });
    w.clock.set(T0 + 1);
    const [first] = (await w.pass()).actions as [FireAction];
    // The first attempt fails and its retry waits in the queue, chained to it.
    await w.ledger.updateStatus("schedule_run", first.run_id, { newStatus: "running", reasonCode: "schedule.running.started" });
    await w.ledger.updateStatus("schedule_run", first.run_id, { newStatus: "failed", reasonCode: "run.failed.exit_nonzero" });
    const retry = await submitRun(w.ledger, { queue: "nightly", request: scheduledRequest({ argv: ["true"], cwd: undefined, timeout: undefined, passEnv: [], workdir: "/", env: {} }), chain: { parentId: first.run_id, depth: 1 } });
    w.clock.set(T0 + HOUR + 1);
    expect((await w.pass()).actions.map((a) => a.outcome)).toEqual(["skipped_overlap"]);
    await w.ledger.updateStatus("schedule_run", retry.id, { newStatus: "cancelled", reasonCode: "schedule.cancelled.operator" });
    w.clock.set(T0 + 2 * HOUR + 1);
    expect((await w.pass()).actions.map((a) => a.outcome)).toEqual(["fired"]);
  });

  test("--overlap queue: a due time fires even while the previous run is queued", async () => {
    const w = world();
    await schedule(w.ledger, "hourly", { overlap: "queue" });
    w.clock.set(T0 + 1);
    await w.pass();
    w.clock.set(T0 + HOUR + 1);
    expect((await w.pass()).actions.map((a) => a.outcome)).toEqual(["fired"]);
  });

  test("a schedule whose stored request no longer validates records a failed run and holds back no other schedule", async () => {
    const w = world();
    await schedule(w.ledger, "broken", { overlap: "queue" });
    await schedule(w.ledger, "fine", { overlap: "queue" });
    await w.rows().run("UPDATE schedules SET request_json = ? WHERE name = 'broken'", JSON.stringify({ version: 1, argv: [] }));
    w.clock.set(T0 + 1);
    const pass = await w.pass();
    expect(pass.errors).toEqual([]);
    expect(pass.actions.map((a) => [a.schedule, a.outcome]).sort()).toEqual([["broken", "fired"], ["fine", "fired"]]);
    const runs = await w.rows().all<{ name: string; status: string; reason: string }>(
      "SELECT s.name, r.status, r.status_reason_code AS reason FROM schedule_fires f JOIN schedules s ON s.id = f.schedule_id JOIN schedule_runs r ON r.id = f.run_id ORDER BY s.name",
    );
    expect(runs).toEqual([
      { name: "broken", status: "failed", reason: "run.failed.exception" },
      { name: "fine", status: "queued", reason: "schedule.fired.due" },
    ]);
    // Decided: the next pass does not try the broken one again.
    expect((await w.pass()).actions).toEqual([]);
  });

  test("a paused schedule fires nothing and records nothing missed; resumed, it starts from the next due time", async () => {
    const w = world();
    await schedule(w.ledger, "hourly");
    await setSchedulePaused(w.ledger, "hourly", true);
    w.clock.set(T0 + 5 * HOUR + 600);
    expect((await w.pass()).actions).toEqual([]);
    await setSchedulePaused(w.ledger, "hourly", false);
    expect((await w.pass()).actions).toEqual([]);
    w.clock.set(T0 + 6 * HOUR + 1);
    expect((await w.pass()).actions.map((a) => [a.due_at - T0, a.outcome])).toEqual([[6 * HOUR, "fired"]]);
    expect(await w.fires()).toHaveLength(1);
  });
});

const BUN = process.execPath;
const WORKER = join(import.meta.dir, "workers/fire-watcher.ts");

describe("two watchers on one ledger (real processes)", () => {
  test("every due time of every schedule fires exactly once", async () => {
    const clock = fakeClock(T0 - 30);
    const t = tempLedger({ now: clock.now });
    const names = Array.from({ length: 12 }, (_, i) => `s${String(i).padStart(2, "0")}`);
    for (const name of names) await schedule(t.ledger, name, { cron: "*/10 * * * *", overlap: "queue" });
    t.ledger.close();
    // Both watchers pass at the same instants: each due time twice (on time), and the seconds after it.
    const times = Array.from({ length: 6 }, (_, k) => [T0 + k * 600, T0 + k * 600 + 1, T0 + k * 600 + 2]).flat();
    const timesFile = join(t.home, "times.txt");
    await Bun.write(timesFile, times.join("\n"));
    const raceDir = tempDir("li-race-");
    const watchers = ["host-a", "host-b"].map((host) => Bun.spawn([BUN, WORKER, t.liHome, timesFile, raceDir, host], { env: process.env, stdout: "pipe", stderr: "pipe" }));
    await runRace(raceDir, watchers);
    const outputs = await Promise.all(watchers.map(async (p) => JSON.parse(await new Response(p.stdout).text()) as Interval & { actions: FireAction[]; taken: number }));
    expect(await Promise.all(watchers.map((p) => p.exited))).toEqual([0, 0]);
    assertEachOverlapped(outputs);

    const decided = outputs.flatMap((o) => o.actions.map((a) => `${a.schedule}@${a.due_at - T0}`)).sort();
    const expected = names.flatMap((n) => Array.from({ length: 6 }, (_, k) => `${n}@${k * 600}`)).sort();
    expect(decided).toEqual(expected); // each once, across both watchers
    expect(outputs.flatMap((o) => o.actions).every((a) => a.outcome === "fired")).toBe(true);
    const rows = t.rows();
    expect(await rows.get("SELECT COUNT(*) AS n FROM schedule_fires")).toEqual({ n: expected.length });
    expect(await rows.get("SELECT COUNT(*) AS n FROM schedule_runs")).toEqual({ n: expected.length });
    expect(await rows.all("SELECT run_id FROM schedule_fires GROUP BY run_id HAVING COUNT(*) > 1")).toEqual([]);
    expect(await rows.historyProblems()).toEqual([]);
  }, 120_000);
});
