// The host's connection slots for a PostgreSQL ledger (§20, src/ledger/postgres/slots.ts), through the
// module's API and real processes: a slot held by another process is not handed out, it frees when its
// holder is killed -9 (a flock dies with its process), and a wait for one ends at the caller's deadline.

import { afterAll, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { slotCount, slotDir, trySlot, waitForSlot } from "../../../src/ledger/postgres/slots.ts";
import { tempDir } from "../../helpers/temp-dirs.ts";
import { until } from "../../helpers/until.ts";

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
