// Preloaded by bunfig.toml: removes the run's scratch directories (test/helpers/temp-dirs.ts) once every
// test file has run. LI_TEST_KEEP_TEMP=1 keeps them.
import { afterAll } from "bun:test";
import { removeTempDirs } from "./temp-dirs.ts";

afterAll(() => {
  const left = removeTempDirs();
  if (left.length > 0) console.error(`(${left.length} test directories could not be removed, e.g. ${left[0]})`);
});
