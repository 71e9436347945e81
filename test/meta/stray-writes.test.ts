// No test may write outside its own temp directories: the run fails when anything appears under the
// sentinel root (test/helpers/sentinel.ts, checked by the preload test/helpers/stray-writes.ts), and the
// fixtures that name a path that must not exist name one under it.

import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { legRow } from "../helpers/sweep-fixtures.ts";
import { SENTINEL_ROOT } from "../helpers/sentinel.ts";
import { tempDir } from "../helpers/temp-dirs.ts";

const REPO = join(import.meta.dir, "../..");
const PROBE = "./test/fixtures/suites/writes-outside.ts";

/** Runs the probe suite as a bun test run of its own, its sentinel root inside one of our temp directories. */
async function probeRun(write: boolean): Promise<{ code: number; output: string; root: string }> {
  const root = join(tempDir("li-sentinel-"), "never");
  const env: Record<string, string> = { ...(process.env as Record<string, string>), LI_TEST_SENTINEL_ROOT: root, LI_TEST_PROBE_WRITE: write ? "1" : "0" };
  delete env.LI_TEST_BACKEND; // the probe needs no PostgreSQL cluster
  const run = Bun.spawn([process.execPath, "test", PROBE], { cwd: REPO, env, stdout: "pipe", stderr: "pipe" });
  const [code, stdout, stderr] = await Promise.all([run.exited, new Response(run.stdout).text(), new Response(run.stderr).text()]);
  return { code, output: stdout + stderr, root };
}

describe("writes outside the suite's temp directories", () => {
  test("a run that writes under the sentinel root fails, naming what it left", async () => {
    const run = await probeRun(true);
    expect(run.code, run.output).toBe(1);
    expect(run.output).toContain(`the suite wrote outside its temp directories: ${run.root} now exists`);
    expect(run.output).toContain(join(run.root, "runs", "p-leg", "notify.stderr"));
  });

  test("a run that leaves it absent passes", async () => {
    const run = await probeRun(false);
    expect(run.code, run.output).toBe(0);
    expect(existsSync(run.root)).toBe(false);
  });

  test("no test names a fixed path outside its temp directories that it expects to be absent: it names one under the sentinel root", () => {
    const root = join(import.meta.dir, "..");
    const offenders: string[] = [];
    for (const file of new Bun.Glob("**/*.{ts,py,sh}").scanSync({ cwd: root })) {
      if (file === "meta/stray-writes.test.ts") continue;
      const text = readFileSync(join(root, file), "utf8");
      // The path sweep-fixtures once wrote into, and its kin: li under test (or a fixture) may create them.
      if (/["'`]\/nonexistent/.test(text)) offenders.push(relative(root, join(root, file)));
    }
    expect(offenders).toEqual([]);
  });

  test("a leg row's default run directory is in a temp directory of the run, not under the sentinel root", () => {
    const row = legRow("s-meta", { id: "leg-meta", startedAt: 0 }, 0);
    expect(row.state_root.startsWith(SENTINEL_ROOT)).toBe(false);
    expect(existsSync(row.state_root)).toBe(false);
  });
});
