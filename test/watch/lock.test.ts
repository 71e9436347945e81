import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { acquireWatchLock, WatcherAlreadyRunningError } from "../../src/watch/lock.ts";
import { tempDir } from "../helpers/ledger.ts";

const holder = join(import.meta.dir, "../helpers/workers/hold-watch-lock.ts");

async function startHolder(path: string) {
  const proc = Bun.spawn([process.execPath, holder, path], { stdout: "pipe", stderr: "inherit" });
  const reader = proc.stdout.getReader();
  const { value } = await reader.read();
  expect(new TextDecoder().decode(value)).toBe("held\n");
  return proc;
}

describe("the watcher's single-instance lock", () => {
  test("a second holder in another process is refused at once", async () => {
    const path = join(tempDir(), "state.db.watch-lock");
    const proc = await startHolder(path);
    try {
      expect(() => acquireWatchLock(path)).toThrow(WatcherAlreadyRunningError);
    } finally {
      proc.kill("SIGTERM");
      await proc.exited;
    }
    const lock = acquireWatchLock(path);
    lock.release();
  });

  test("a holder killed with SIGKILL leaves no stale lock", async () => {
    const path = join(tempDir(), "state.db.watch-lock");
    const proc = await startHolder(path);
    proc.kill("SIGKILL");
    await proc.exited;
    const lock = acquireWatchLock(path);
    expect(lock.path).toBe(path);
    lock.release();
  });

  test("released locks can be taken again, and release is idempotent", () => {
    const path = join(tempDir(), "lock");
    const a = acquireWatchLock(path);
    a.release();
    a.release();
    const b = acquireWatchLock(path);
    b.release();
  });
});
