// Scratch directories for tests, removed once the run ends: a suite that leaves every run's directories in
// /tmp (some 300 MB a run of the SQLite half) fills a shared disk until tests fail with ENOSPC.
// Removal runs in the background, so a slow disk never holds up the run's last hook.

import { mkdtempSync } from "node:fs";
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
 * Removes `dirs` in the background: a detached `rm -rf` (argv, no shell) that outlives this process. A
 * run's directories, and the PostgreSQL half's cluster (some 60,000 files), took over 100 s to remove on
 * a loaded machine: removed in the run's last hook, that time-out failed a green run.
 */
export function removeInBackground(dirs: readonly string[]): void {
  for (let i = 0; i < dirs.length; i += 500) {
    const rm = Bun.spawn(["rm", "-rf", "--", ...dirs.slice(i, i + 500)], { detached: true, stdin: "ignore", stdout: "ignore", stderr: "ignore" });
    rm.unref();
  }
}

/** Removes (in the background) the directories made so far; LI_TEST_KEEP_TEMP=1 keeps them for a look after a failure. */
export function removeTempDirs(env: Record<string, string | undefined> = process.env): void {
  if (env.LI_TEST_KEEP_TEMP === "1") return;
  removeInBackground(made.splice(0));
}
