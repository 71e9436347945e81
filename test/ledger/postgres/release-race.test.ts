// Giving a PostgreSQL pool back (PgConnection.release, §20) while calls run: a call that waited for its
// slot and overlapped a release gives back the pool it opened, and only that one — never a pool a later
// call opened after the release and is still using (a leg's teardown reading its kill request while an
// earlier kill-request look ends: its read failed 'Connection closed' and the outcome lost the kill).

import { afterAll, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { until } from "../../helpers/until.ts";
import { describePostgres, usePostgresDatabase } from "../../helpers/postgres.ts";
import { pgTestLedger } from "../../helpers/pg-ledger.ts";
import { closeAfterTest } from "../../helpers/test-handles.ts";
import { tempDir } from "../../helpers/temp-dirs.ts";
import { PgConnection } from "../../../src/ledger/postgres/connection.ts";
import { resolvePgTarget } from "../../../src/ledger/postgres/options.ts";
import { slotDir } from "../../../src/ledger/postgres/slots.ts";

const SLOTS_MODULE = join(import.meta.dir, "../../../src/ledger/postgres/slots.ts");
const spawned: Subprocess[] = [];
afterAll(() => {
  for (const p of spawned) if (p.exitCode === null && p.signalCode === null) p.kill("SIGKILL");
});

/** Another process holding one of `dir`'s `count` slots until killed; resolves once it holds it (as slots.test.ts's). */
async function holder(dir: string, count: number): Promise<Subprocess> {
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

/** A promise the test resolves, and one that says the call reached it. */
function gate() {
  let open!: () => void;
  let reached!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  const atGate = new Promise<void>((r) => (reached = r));
  return { open, reached: atGate, wait: () => (reached(), opened) };
}

describePostgres("giving a pool back while calls run (§20)", () => {
  const db = usePostgresDatabase();

  test("a call that overlapped a release gives back only the pool it opened: a call that opened the next one after the release keeps it", async () => {
    const l = await pgTestLedger(db);
    closeAfterTest(() => l.close());
    // A leg's shape: one connection, taken with one of the host's slots.
    const conn = new PgConnection(resolvePgTarget(l.url, {}), { create: false, shape: { max: 1 }, slots: { dir: slotDir(tempDir("li-release-"), "k"), count: 6 } });
    closeAfterTest(() => conn.close());

    // A (a kill-request look) opens the pool, reads, and is still running when the pool is given back.
    const a = gate();
    const first = conn.bounded(async (sql) => {
      const [row] = await sql`SELECT 1 AS one`;
      await a.wait();
      return row!.one as number;
    });
    await a.reached;
    conn.release();
    // B (the teardown's snapshot) starts after the release: it opens the next pool, and is mid-call when A ends.
    const b = gate();
    const second = conn.bounded(async (sql) => {
      await b.wait();
      const [row] = await sql`SELECT 2 AS two`;
      return row!.two as number;
    });
    await b.reached;
    a.open();
    expect(await first).toBe(1);
    b.open();
    expect(await second).toBe(2);
  });

  test("released while a call waited for its slot: the pool that call opened after is given back once it ends, with its slot", async () => {
    const l = await pgTestLedger(db);
    closeAfterTest(() => l.close());
    const dir = slotDir(tempDir("li-release-"), "k");
    const conn = new PgConnection(resolvePgTarget(l.url, {}), { create: false, shape: { max: 1 }, slots: { dir, count: 1 }, patience: { seconds: 60 } });
    closeAfterTest(() => conn.close());
    const other = await holder(dir, 1);
    const call = conn.bounded(async (sql) => (await sql`SELECT 1 AS one`)[0]!.one as number);
    // The call waits for the one slot; the leg gives its connections back meanwhile (it joined its watcher).
    conn.release();
    other.kill("SIGKILL");
    await other.exited;
    expect(await call).toBe(1);
    // Its pool went back, slot and all: another process can take the slot.
    await until("the slot free again", () => Bun.spawnSync(["flock", "-n", join(dir, "0.lock"), "true"]).exitCode === 0);
  });
});
