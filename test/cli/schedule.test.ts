import { describe, expect, test } from "bun:test";
import { li } from "../helpers/cli.ts";
import { ledgerRows } from "../helpers/ledger-rows.ts";
import { tempDir } from "../helpers/temp-dirs.ts";

const HOUR = 3600;
const add = (home: string, name: string, extra: string[] = [], cmd = ["true"]) => li(["schedule", "add", name, "--cron", "0 * * * *", "--tz", "UTC", "--queue", "hourly", ...extra, "--", ...cmd], { home });

describe("li schedule: bad input is refused in one line, nothing written", () => {
  const cases: [string, string[], RegExp][] = [
    ["a bad cron string", ["schedule", "add", "n", "--cron", "61 * * * *", "--queue", "q", "--", "true"], /^li: --cron: "61 \* \* \* \*" is not a cron expression .*minute: 61\n$/],
    ["a cron string of four fields", ["schedule", "add", "n", "--cron", "* * * *", "--queue", "q", "--", "true"], /^li: --cron: "\* \* \* \*" is not a cron expression/],
    ["a bad --tz", ["schedule", "add", "n", "--cron", "0 2 * * *", "--tz", "Mars/Olympus", "--queue", "q", "--", "true"], /^li: --tz: "Mars\/Olympus" is not a time zone/],
    ["a bad --overlap", ["schedule", "add", "n", "--cron", "0 2 * * *", "--overlap", "wait", "--queue", "q", "--", "true"], /^li: --overlap: "wait" is not one of skip, queue\n$/],
    ["a bad --missed", ["schedule", "add", "n", "--cron", "0 2 * * *", "--missed", "all", "--queue", "q", "--", "true"], /^li: --missed: "all" is not one of skip, latest\n$/],
    ["no --queue", ["schedule", "add", "n", "--cron", "0 2 * * *", "--", "true"], /^li: li schedule add needs --queue NAME/],
    ["a bad queue name", ["schedule", "add", "n", "--cron", "0 2 * * *", "--queue", "../q", "--", "true"], /^li: --queue "\.\.\/q": a queue name is/],
    ["no command", ["schedule", "add", "n", "--cron", "0 2 * * *", "--queue", "q"], /^li: li schedule add needs the command to run after --/],
    ["a bad --timeout", ["schedule", "add", "n", "--cron", "0 2 * * *", "--queue", "q", "--timeout", "soon", "--", "true"], /^li: --timeout: "soon" is not a duration/],
  ];

  test("on an empty machine: no ledger is created", async () => {
    const home = tempDir();
    for (const [what, args, message] of cases) {
      const r = await li(args, { home });
      expect({ what, code: r.code, stderr: r.stderr, stdout: r.stdout }).toEqual({ what, code: 2, stderr: expect.stringMatching(message), stdout: "" });
      expect(r.stderr.trimEnd().split("\n")).toHaveLength(1);
    }
    expect(await ledgerRows(home).exists()).toBe(false);
  }, 60_000);

  test("on a ledger with a schedule: the ledger is unchanged, a taken name too", async () => {
    const home = tempDir();
    expect((await add(home, "n")).code).toBe(0);
    const rows = ledgerRows(home);
    const before = await rows.dump();
    for (const [what, args, message] of [...cases, ["a taken name", ["schedule", "add", "n", "--cron", "0 3 * * *", "--queue", "q", "--", "true"], /^li: schedule 'n' already exists/] as const]) {
      const r = await li([...args], { home });
      expect({ what, code: r.code, stderr: r.stderr }).toEqual({ what, code: 2, stderr: expect.stringMatching(message) });
    }
    for (const verb of ["rm", "pause", "resume"]) {
      const r = await li(["schedule", verb, "nope"], { home });
      expect({ verb, code: r.code, stderr: r.stderr }).toEqual({ verb, code: 2, stderr: "li: no schedule named 'nope' (li schedule ls)\n" });
    }
    expect(await rows.dump()).toEqual(before);
  }, 60_000);
});

describe("li schedule with li watch", () => {
  test("add, ls --json, pause, resume, rm", async () => {
    const home = tempDir();
    const added = await li(["schedule", "add", "nightly", "--cron", "0 2 * * *", "--tz", "Europe/Berlin", "--overlap", "queue", "--missed", "latest", "--queue", "builds", "--pass-env", "DEPLOY_TOKEN", "--json", "--", "make", "nightly"], {
      home,
      env: { DEPLOY_TOKEN: "hunter2" },
    });
    expect(added.code).toBe(0);
    const row = JSON.parse(added.stdout);
    expect(row).toMatchObject({ name: "nightly", cron: "0 2 * * *", time_zone: "Europe/Berlin", queue: "builds", overlap: "queue", missed: "latest", paused: false, request: { argv: ["make", "nightly"], env_names: expect.arrayContaining(["DEPLOY_TOKEN", "PATH"]) } });
    // The value travels with the schedule (the command gets it) but is never printed.
    expect(added.stdout).not.toContain("hunter2");
    expect((await li(["schedule", "ls", "--json"], { home })).stdout).not.toContain("hunter2");
    // 02:00 in Berlin is 00:00 or 01:00 UTC.
    expect([0, 1]).toContain(new Date(row.next_due_at * 1000).getUTCHours());
    expect((await li(["schedule", "pause", "nightly"], { home })).code).toBe(0);
    const listed = JSON.parse((await li(["schedule", "ls", "--json"], { home })).stdout);
    expect(listed).toMatchObject([{ name: "nightly", paused: true, last_fire: null }]);
    expect((await li(["schedule", "ls"], { home })).stdout).toMatch(/^NAME +CRON +ZONE +QUEUE +STATE.*\nnightly +0 2 \* \* \* +Europe\/Berlin +builds +paused/);
    expect((await li(["schedule", "resume", "nightly"], { home })).code).toBe(0);
    expect(JSON.parse((await li(["schedule", "ls", "--json"], { home })).stdout)[0].paused).toBe(false);
    expect((await li(["schedule", "rm", "nightly"], { home })).code).toBe(0);
    expect(JSON.parse((await li(["schedule", "ls", "--json"], { home })).stdout)).toEqual([]);
  }, 60_000);

  test("li watch after three hours down: the missed due times are recorded skipped, the latest runs (--missed latest)", async () => {
    const home = tempDir();
    expect((await add(home, "hourly", ["--missed", "latest", "--overlap", "queue"])).code).toBe(0);
    const rows = ledgerRows(home);
    // The schedule's cursor as a watcher stopped three hours ago left it (a backdated row, not a sleep).
    const thisHour = Math.floor(Date.now() / 1000 / HOUR) * HOUR;
    await rows.run("UPDATE schedules SET next_due_at = ?", thisHour - 3 * HOUR);
    const watched = await li(["watch", "--once"], { home });
    expect(watched.code).toBe(0);
    const fires = await rows.all<{ due_at: number; outcome: string; status: string; reason: string; queue: string }>(
      // The reason each run was created with: the fired one may already have been leased and run by the same pass.
      "SELECT f.due_at, f.outcome, r.status, (SELECT t.reason_code FROM status_transitions t WHERE t.entity_type = 'schedule_run' AND t.entity_id = r.id ORDER BY t.seq LIMIT 1) AS reason, r.queue FROM schedule_fires f JOIN schedule_runs r ON r.id = f.run_id ORDER BY f.due_at",
    );
    expect(fires.map((f) => [f.due_at - thisHour, f.outcome, f.reason, f.queue])).toEqual([
      [-3 * HOUR, "skipped_missed", "schedule.skipped.missed_fire", "hourly"],
      [-2 * HOUR, "skipped_missed", "schedule.skipped.missed_fire", "hourly"],
      [-1 * HOUR, "skipped_missed", "schedule.skipped.missed_fire", "hourly"],
      [0, "fired", "schedule.fired.due", "hourly"],
    ]);
    // A second pass decides nothing more: one decision per due time.
    expect((await li(["watch", "--once"], { home })).code).toBe(0);
    expect(await rows.get("SELECT COUNT(*) AS n FROM schedule_fires")).toEqual({ n: 4 });
    const ls = JSON.parse((await li(["schedule", "ls", "--json"], { home })).stdout);
    expect(ls[0]).toMatchObject({ name: "hourly", next_due_at: thisHour + HOUR, last_fire: { due_at: thisHour, outcome: "fired" } });
  }, 60_000);
});
