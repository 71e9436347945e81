// The host's connection slots for a PostgreSQL ledger (§20, src/ledger/postgres/slots.ts), through the
// module's API and real processes: a slot held by another process is not handed out, it frees when its
// holder is killed -9 (a flock dies with its process), and a wait for one ends at the caller's deadline.
// A leg waits for its turn within its own --ledger-retry, quietly (a queue on its host is no outage), and a
// slot that stays taken past it still starts the command within --ledger-retry and one connect timeout.

import { afterAll, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { slotCount, slotDir, trySlot, waitForSlot } from "../../../src/ledger/postgres/slots.ts";
import { tempDir } from "../../helpers/temp-dirs.ts";
import { killedAfterEachTest, NeverHappens, until } from "../../helpers/until.ts";
import { LI_BINARY, liEnv } from "../../helpers/cli.ts";
import { describePostgres, usePostgresDatabase } from "../../helpers/postgres.ts";
import { pgTestLedger } from "../../helpers/pg-ledger.ts";
import { closeAfterTest } from "../../helpers/test-handles.ts";
import { slotPlace } from "../../../src/ledger/postgres/connection.ts";
import { resolvePgTarget } from "../../../src/ledger/postgres/options.ts";

const SLOTS_MODULE = join(import.meta.dir, "../../../src/ledger/postgres/slots.ts");
const spawned: Subprocess[] = [];
afterAll(() => {
  for (const p of spawned) if (p.exitCode === null && p.signalCode === null) p.kill("SIGKILL");
});

/** Another process that takes a slot of `dir` (of `count`) and holds it until killed; resolves once it holds it. */
async function holder(dir: string, count: number) {
  const home = tempDir("li-slot-holder-");
  const script = join(home, "hold.ts");
  const ready = join(home, "ready");
  writeFileSync(script, `import { trySlot } from ${JSON.stringify(SLOTS_MODULE)};\nif (!trySlot(${JSON.stringify(dir)}, ${count})) process.exit(3);\nawait Bun.write(${JSON.stringify(ready)}, String(process.pid));\nsetInterval(() => {}, 1 << 30);\n`);
  const proc = Bun.spawn([process.execPath, script], { stdin: "ignore", stdout: "ignore", stderr: "inherit" });
  spawned.push(proc);
  await until("the holder holding its slot", () => {
    try {
      return readFileSync(ready, "utf8") === String(proc.pid);
    } catch {
      return false;
    }
  });
  return proc;
}

test("a slot another process holds is not handed out; kill -9 of its holder frees it", async () => {
  const dir = slotDir(tempDir("li-slots-"), "postgres://db.example:5432/li#li");
  const proc = await holder(dir, 1);
  expect(trySlot(dir, 1)).toBeNull();
  proc.kill("SIGKILL");
  await proc.exited;
  const slot = await until("the slot free again", () => trySlot(dir, 1));
  slot.release();
});

test("a process takes one slot for all its pools, and gives it back when the last one is released", async () => {
  const dir = slotDir(tempDir("li-slots-"), "k");
  const first = trySlot(dir, 1)!;
  const second = trySlot(dir, 1);
  expect(second).not.toBeNull();
  first.release();
  first.release();
  // Still held for the second pool: another process is refused.
  expect(Bun.spawnSync(["flock", "-n", join(dir, "0.lock"), "true"]).exitCode).not.toBe(0);
  second!.release();
  expect(Bun.spawnSync(["flock", "-n", join(dir, "0.lock"), "true"]).exitCode).toBe(0);
});

test("a wait for a slot ends at the caller's deadline when every slot stays taken, and gets one freed meanwhile", async () => {
  const dir = slotDir(tempDir("li-slots-"), "k");
  const proc = await holder(dir, 1);
  const started = performance.now();
  expect(await waitForSlot(dir, 1, 300)).toBeNull();
  expect(performance.now() - started).toBeGreaterThanOrEqual(300);
  const waiting = waitForSlot(dir, 1, 60_000);
  proc.kill("SIGKILL");
  const slot = await waiting;
  expect(slot).not.toBeNull();
  slot!.release();
});

test("LI_PG_SLOTS sets the count; a bad value is a usage error naming it", () => {
  expect(slotCount({})).toBe(6);
  expect(slotCount({ LI_PG_SLOTS: "2" })).toBe(2);
  expect(() => slotCount({ LI_PG_SLOTS: "0" })).toThrow(/LI_PG_SLOTS must be a whole number/);
});

describePostgres("a leg's turn at the host's slots (§20)", () => {
  const db = usePostgresDatabase();
  const leftRunning = killedAfterEachTest();

  /**
   * A ledger whose legs run on a host (LI_HOME) of their own, where this test process holds no slot, and
   * connect with a 1 s connect timeout through one slot; that slot's directory.
   */
  const world = async () => {
    const l = await pgTestLedger(db);
    closeAfterTest(() => l.close());
    const home = tempDir("li-slot-legs-");
    const url = `${l.url}&connect_timeout=1`;
    const dir = slotPlace(resolvePgTarget(url, {}), home, false)!.dir;
    return { l, home, dir, env: liEnv(home, { LI_DB: url, LI_PG_SLOTS: "1" }) };
  };

  test("a leg that waits for its slot past a connect timeout is queued, not told the ledger is unreachable: it says only its outcome and is recorded", async () => {
    const { l, home, dir, env } = await world();
    const other = await holder(dir, 1);
    const started = performance.now();
    const leg = Bun.spawn([LI_BINARY, "agent", "--ledger-retry", "60s", "--", "true"], { env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    leftRunning.push({ pid: leg.pid, group: false });
    const stderr = new Response(leg.stderr).text();
    const stdout = new Response(leg.stdout).text();
    // The slot stays taken for three connect timeouts: the old code gave up its wait after one, and said
    // "the ledger is unreachable (… connection slots … stayed taken …); retrying the setup".
    await until("three connect timeouts with the slot taken", () => {
      if (leg.exitCode !== null) throw new NeverHappens(`li agent ended while its slot was taken (exit ${leg.exitCode})`);
      return performance.now() - started >= 3000;
    });
    other.kill("SIGKILL");
    await other.exited;
    expect(await leg.exited).toBe(0);
    await stdout;
    expect(await stderr).toMatch(/^li: completed \(run\.completed\.ok\) session \S+ branch \S+\n$/);
    expect(await l.rows().all("SELECT status FROM sessions")).toEqual([{ status: "completed" }]);
    expect(existsSync(join(home, "spool")) ? readdirSync(join(home, "spool")).filter((f) => f.endsWith(".json")) : []).toEqual([]);
  });

  test("a slot that stays taken past --ledger-retry 2s: the command still starts within it and one connect timeout, and its whole leg is spooled, naming the slots", async () => {
    const { home, dir, env } = await world();
    await holder(dir, 1);
    const startedFile = join(mkdtempSync(join(home, "scratch-")), "started");
    const spawnedAtMs = Date.now();
    const leg = Bun.spawn([LI_BINARY, "agent", "--ledger-retry", "2s", "--", "sh", "-c", `date +%s%N > ${startedFile}`], { env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    leftRunning.push({ pid: leg.pid, group: false });
    const [stderr, code] = await Promise.all([new Response(leg.stderr).text(), leg.exited]);
    expect(code).toBe(0);
    // SPEC §17: --ledger-retry plus one connect timeout, with a generous margin for a loaded machine's process start.
    expect(Number(readFileSync(startedFile, "utf8").trim()) / 1e6 - spawnedAtMs).toBeLessThanOrEqual(2000 + 1000 + 3000);
    expect(stderr.trimEnd().split("\n").at(-1)).toMatch(/^li: the outcome is spooled in \S+\.json \(ledger postgres:\/\/\S+: all 1 of this host's connection slots \(LI_PG_SLOTS\) stayed taken by other li processes for \S+\)/);
    expect(readdirSync(join(home, "spool")).filter((f) => f.endsWith(".json"))).toHaveLength(1);
  });
});
