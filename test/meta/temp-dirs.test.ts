// A test run removes the test directories it made (test/helpers/temp-dirs.ts, through the preload
// test/helpers/temp-cleanup.ts, in the background), unless LI_TEST_KEEP_TEMP=1: left behind, they fill a shared disk.

import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { tempDir } from "../helpers/temp-dirs.ts";
import { until } from "../helpers/until.ts";

const REPO = join(import.meta.dir, "../..");
const PROBE = "./test/fixtures/suites/makes-temp-dir.ts";

/** Runs the probe suite as a bun test run of its own, with its temp directory inside one of ours. */
async function probeRun(extra: Record<string, string> = {}): Promise<{ code: number; dir: string; output: string }> {
  const tmp = tempDir("li-probe-tmp-");
  const out = join(tmp, "probe.out");
  const env: Record<string, string> = { ...(process.env as Record<string, string>), TMPDIR: tmp, LI_TEST_PROBE_OUT: out };
  delete env.LI_TEST_BACKEND; // the probe needs no PostgreSQL cluster
  delete env.LI_TEST_KEEP_TEMP; // whatever this run was told
  Object.assign(env, extra);
  const run = Bun.spawn([process.execPath, "test", PROBE], { cwd: REPO, env, stdout: "pipe", stderr: "pipe" });
  const [code, stdout, stderr] = await Promise.all([run.exited, new Response(run.stdout).text(), new Response(run.stderr).text()]);
  const dir = existsSync(out) ? readFileSync(out, "utf8") : "";
  expect(dirname(dir)).toBe(tmp);
  return { code, dir, output: stdout + stderr };
}

describe("test directories", () => {
  test("are removed once the run's last test file is done (in the background)", async () => {
    const run = await probeRun();
    expect(run.code, run.output).toBe(0);
    await until("the probe run's directory to be removed", () => !existsSync(run.dir));
  });

  test("LI_TEST_KEEP_TEMP=1 keeps them, with what the tests wrote", async () => {
    const run = await probeRun({ LI_TEST_KEEP_TEMP: "1" });
    expect(run.code, run.output).toBe(0);
    expect(readFileSync(join(run.dir, "content"), "utf8")).toBe("x");
  });
});
