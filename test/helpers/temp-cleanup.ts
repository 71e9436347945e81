// Preloaded by bunfig.toml: removes the run's scratch directories (test/helpers/temp-dirs.ts) once every
// test file has run, in the background. LI_TEST_KEEP_TEMP=1 keeps them.
import { afterAll } from "bun:test";
import { removeTempDirs } from "./temp-dirs.ts";

afterAll(() => removeTempDirs());
