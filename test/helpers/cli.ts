// Runs the compiled binary (dist/li) the way a user would, in a temp LI_HOME, from a chosen directory.

import { existsSync } from "node:fs";
import { join } from "node:path";
import { ledgerEnvFor } from "./backends.ts";

export const LI_BINARY = join(import.meta.dir, "../../dist/li");

export interface LiResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface LiOptions {
  home?: string;
  cwd?: string;
  env?: Record<string, string | undefined>;
  stdin?: string;
}

/**
 * The environment li sees: nothing from the developer's own li configuration leaks in. The home's
 * ledger is on the suite's backend (test/helpers/backends.ts) unless `extra` names LI_DB itself.
 */
export function liEnv(home: string | undefined, extra: Record<string, string | undefined> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  // LI_TEST_* configure the test run itself (li reads none): workers li's tests spawn need them.
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && (!k.startsWith("LI_") || k.startsWith("LI_TEST_"))) env[k] = v;
  if (home) env.LI_HOME = home;
  env.NO_COLOR = "1";
  for (const [k, v] of Object.entries(extra)) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  if (env.LI_HOME && !("LI_DB" in extra)) Object.assign(env, ledgerEnvFor(env.LI_HOME));
  return env;
}

export async function li(args: string[], options: LiOptions = {}): Promise<LiResult> {
  if (!existsSync(LI_BINARY)) throw new Error(`build the binary first (npm run build): ${LI_BINARY} is missing`);
  const proc = Bun.spawn([LI_BINARY, ...args], {
    cwd: options.cwd ?? process.cwd(),
    env: liEnv(options.home, options.env),
    stdin: options.stdin === undefined ? "ignore" : new Blob([options.stdin]),
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr };
}
