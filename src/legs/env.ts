// The environment a leg's command sees (SPEC §8): li's own, minus what was consumed, plus the leg's identity.

import { HANDLER_OWNER_ENV } from "../notify/owner-env.ts";
import { RUN_ID_ENV } from "./rundir.ts";

/** Set by `li agent --detach` for the supervising li it starts; never passed to the command. */
export const SUPERVISOR_ENV = "LI_SUPERVISOR_READY";

/** The leg's run id in the command's environment: also how the reaper finds a command no marker names. */
export const LEG_RUN_ID_ENV = "LI_LEG_RUN_ID";

export interface LegIdentity {
  sessionId: string;
  branchId: string;
  runId: string;
  artifactRoot: string;
  escalateFile: string;
}

export function commandEnv(base: Readonly<Record<string, string | undefined>>, leg: LegIdentity): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(base)) {
    // A leg started by a handler outlives it by design: its command is no part of the handler (§20).
    if (value !== undefined && key !== RUN_ID_ENV && key !== SUPERVISOR_ENV && key !== HANDLER_OWNER_ENV) env[key] = value;
  }
  env.LI_SESSION_ID = leg.sessionId;
  env.LI_BRANCH_ID = leg.branchId;
  env[LEG_RUN_ID_ENV] = leg.runId;
  env.LI_ARTIFACT_ROOT = leg.artifactRoot;
  env.LI_ESCALATE_FILE = leg.escalateFile;
  return env;
}
