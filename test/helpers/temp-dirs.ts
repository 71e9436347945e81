// Scratch directories for tests, removed once the run ends: a suite that leaves every run's directories in
// /tmp (some 300 MB a run of the SQLite half) fills a shared disk until tests fail with ENOSPC.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Every directory tempDir made in this process, in creation order. */
const made: string[] = [];

/** A fresh directory under the system's temp directory, removed after the last test file (see removeTempDirs). */
export function tempDir(prefix = "li-test-"): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}

/**
 * Removes the directories made so far; LI_TEST_KEEP_TEMP=1 keeps them for a look after a failure. Returns
 * the directories that could not be removed (a process of a test still writing in one, a mode that denies it).
 */
export function removeTempDirs(env: Record<string, string | undefined> = process.env): string[] {
  if (env.LI_TEST_KEEP_TEMP === "1") return [];
  const left: string[] = [];
  for (const dir of made.splice(0)) {
    try {
      rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
    } catch {
      left.push(dir);
    }
  }
  return left;
}
