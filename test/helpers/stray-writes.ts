// Preloaded by bunfig.toml: fails the run when, after the last test file, anything exists under the
// sentinel root (test/helpers/sentinel.ts) that was absent when the run began. No test may write outside
// its own temp directories; a root that was already there (left by an older run) is reported, not blamed.

import { afterAll } from "bun:test";
import { SENTINEL_ROOT, strayEntries } from "./sentinel.ts";

const presentAtStart = strayEntries() !== null;
if (presentAtStart) console.error(`note: ${SENTINEL_ROOT} exists before this run (an older run wrote it); remove it so the stray-write check can see this one`);

afterAll(() => {
  if (presentAtStart) return;
  const stray = strayEntries();
  if (stray !== null) {
    throw new Error(`the suite wrote outside its temp directories: ${SENTINEL_ROOT} now exists (${stray.join(", ") || "empty"}); a test that needs a missing path must leave it missing`);
  }
});
