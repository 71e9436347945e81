// Preloaded by bunfig.toml: fails the run when, after the last test file, anything exists under the
// run's sentinel root (test/helpers/sentinel.ts). No test may write outside its own temp directories; a
// root that was already there (given by LI_TEST_SENTINEL_ROOT and written before) is reported, not blamed.

import { afterAll } from "bun:test";
import { SENTINEL_ROOT, strayEntries } from "./sentinel.ts";

const presentAtStart = strayEntries() !== null;
if (presentAtStart) console.error(`note: ${SENTINEL_ROOT} exists before this run; remove it so the stray-write check can see this one`);

afterAll(() => {
  if (presentAtStart) return;
  const stray = strayEntries();
  if (stray !== null) {
    throw new Error(`the suite wrote outside its temp directories: ${SENTINEL_ROOT} now exists (${stray.join(", ") || "empty"}); a test that needs a missing path must leave it missing`);
  }
});
