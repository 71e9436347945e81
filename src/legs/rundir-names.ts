// What a leg request names of its run directory before any is allocated (SPEC §6): the variable that may
// give the run id, and where --save-dir points. Apart from rundir.ts so that validating a request (legs/
// request.ts, also li agent --queue's submit) loads none of the run directory's writers.

import os from "node:os";
import path from "node:path";

export const RUN_ID_ENV = "LI_RUN_ID";

/** `--save-dir` as the artifact root it becomes: `~` expanded, resolved against the working directory. */
export function resolveSaveDir(saveDir: string, homeDir: string = os.homedir(), workdir: string = process.cwd()): string {
  return path.resolve(workdir, expandHome(saveDir, homeDir));
}

function expandHome(p: string, home: string): string {
  if (p === "~") return home;
  if (p.startsWith("~/")) return path.join(home, p.slice(2));
  return p;
}
