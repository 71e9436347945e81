// The environment a leg's command sees (SPEC §8): li's own, minus what was consumed, plus the leg's identity.

import { HANDLER_OWNER_ENV } from "../notify/owner-env.ts";
import { CREDENTIAL_VARIABLES } from "../util/credentials.ts";
import { RUN_ID_ENV } from "./rundir-names.ts";
import { SUPERVISOR_ENV } from "./supervisor-argv.ts";

export { SUPERVISOR_ENV } from "./supervisor-argv.ts";

/** The leg's run id in the command's environment: also how the reaper finds a command no marker names. */
export const LEG_RUN_ID_ENV = "LI_LEG_RUN_ID";

export interface LegIdentity {
  sessionId: string;
  branchId: string;
  runId: string;
  artifactRoot: string;
  escalateFile: string;
}

/**
 * The command's environment: li's own without li's channel, the run id it consumed and the credentials it
 * consumed (`LI_DB`, `PGPASSWORD`: §18), except those `passEnv` names (`--pass-env`); plus the leg's identity.
 */
export function commandEnv(base: Readonly<Record<string, string | undefined>>, leg: LegIdentity, passEnv: readonly string[] = []): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(base)) {
    // A leg started by a handler outlives it by design: its command is no part of the handler (§20).
    if (value === undefined || key === RUN_ID_ENV || key === SUPERVISOR_ENV || key === HANDLER_OWNER_ENV) continue;
    if (CREDENTIAL_VARIABLES.includes(key) && !passEnv.includes(key)) continue;
    env[key] = value;
  }
  env.LI_SESSION_ID = leg.sessionId;
  env.LI_BRANCH_ID = leg.branchId;
  env[LEG_RUN_ID_ENV] = leg.runId;
  env.LI_ARTIFACT_ROOT = leg.artifactRoot;
  env.LI_ESCALATE_FILE = leg.escalateFile;
  return env;
}
