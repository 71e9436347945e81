// A root the suite never owns. A test that needs a path that must not exist (a missing command, a run
// directory that is gone) names one under it; the preload test/helpers/stray-writes.ts fails the run when
// anything appears there, so a test (or li under test) that writes outside its temp directories is caught.
// One root per run (its processes inherit it through LI_TEST_SENTINEL_ROOT), so two runs on one machine
// never blame each other; test/meta/stray-writes.test.ts keeps fixed paths such as /nonexistent out of the tests.

import { randomBytes } from "node:crypto";
import { existsSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const SENTINEL_ROOT = process.env.LI_TEST_SENTINEL_ROOT || join(tmpdir(), `li-never-written-${process.pid}-${randomBytes(4).toString("hex")}`);
process.env.LI_TEST_SENTINEL_ROOT = SENTINEL_ROOT;

/** A path that must stay absent for the whole run. */
export function sentinelPath(...parts: string[]): string {
  return join(SENTINEL_ROOT, ...parts);
}

/** What the run left under the sentinel root (a few entries, for the message), or null when it is still absent. */
export function strayEntries(root: string = SENTINEL_ROOT): string[] | null {
  if (!existsSync(root)) return null;
  try {
    return readdirSync(root, { recursive: true }).slice(0, 5).map((entry) => join(root, String(entry)));
  } catch {
    return [root];
  }
}
