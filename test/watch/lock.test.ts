import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { acquireWatchLock, WatcherAlreadyRunningError } from "../../src/watch/lock.ts";
import { tempLedger } from "../helpers/ledger.ts";
import { until } from "../helpers/until.ts";

const holder = join(import.meta.dir, "../helpers/workers/hold-watch-lock.ts");

async function startHolder(liHome: string) {
  // env: process.env carries the suite's backend (test/helpers/backends.ts) to the holder.
  const proc = Bun.spawn([process.execPath, holder, liHome], { env: process.env, stdout: "pipe", stderr: "inherit" });
  const reader = proc.stdout.getReader();
  const { value } = await reader.read();
  expect(new TextDecoder().decode(value)).toBe("held\n");
  return proc;
}

describe("the watcher's single-instance lock, taken through the ledger's backend", () => {
  test("a second holder in another process is refused at once, naming the lock", async () => {
    const { ledger, liHome } = tempLedger();
    await ledger.ready();
    const proc = await startHolder(liHome);
    let refusedPath: string | undefined;
    try {
      const refused = await acquireWatchLock(ledger.backend, "this-host").catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(WatcherAlreadyRunningError);
      refusedPath = (refused as WatcherAlreadyRunningError).path;
    } finally {
      proc.kill("SIGTERM");
      await proc.exited;
    }
    const lock = await acquireWatchLock(ledger.backend, "this-host");
    expect(refusedPath).toBe(lock.path);
    await lock.release();
  });

  test("a holder killed with SIGKILL leaves no stale lock", async () => {
    const { ledger, liHome } = tempLedger();
    await ledger.ready();
    const proc = await startHolder(liHome);
    proc.kill("SIGKILL");
    await proc.exited;
    // SQLite's file lock goes with the process; PostgreSQL's advisory lock goes when the server notices
    // the dead client's connection closed, a moment later. Either way nobody has to clear it by hand.
    const lock = await until("the killed holder's lock to be free", () => acquireWatchLock(ledger.backend, "this-host").catch((error: unknown) => {
      if (error instanceof WatcherAlreadyRunningError) return null;
      throw error;
    }));
    await lock.ensureHeld();
    await lock.release();
  });

  test("released locks can be taken again, and release is idempotent", async () => {
    const { ledger } = tempLedger();
    const a = await acquireWatchLock(ledger.backend, "this-host");
    await a.release();
    await a.release();
    const b = await acquireWatchLock(ledger.backend, "this-host");
    await b.release();
  });
});
