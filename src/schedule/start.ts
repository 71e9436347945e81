// Starting the leg of a leased run (SPEC §19): the same detached supervisor as `li agent --detach`, told
// only the run's id; it reads the whole leg request from the ledger itself, so no user string travels in
// an argv, and it runs in the directory and environment the submitter had (the allowlist).

import { existsSync } from "node:fs";
import type { ScheduleRunRow } from "../ledger/rows.ts";
import { startDetached, type WarmSupervisor } from "../legs/detach.ts";
import { parseStoredRequest } from "./request.ts";

/** The flag that makes `li agent` the supervisor of a leased run (internal: li watch and li agent --queue use it). */
export const SCHEDULE_RUN_FLAG = "--schedule-run";

/**
 * `died`: the supervisor was killed by a signal before it reported, rather than refusing the run: nothing
 * says the run is at fault, so it is left leased, and its lease's expiry queues it again (§19's lease attempts).
 */
export type LegStart = { ok: true; sessionId: string } | { ok: false; message: string; died?: boolean };

/** The dispatcher's own run id and supervisor channel are its own, never its legs'. */
const NOT_PASSED: ReadonlySet<string> = new Set(["LI_RUN_ID", "LI_SUPERVISOR_READY"]);

/**
 * Variables of the dispatcher's own environment the supervisor needs to reach the same ledger as the same
 * host (LI_HOME, LI_DB, LI_HOST_ID, PG* connection settings…), over the submitter's allowlisted ones.
 */
export function dispatcherEnv(env: Readonly<Record<string, string | undefined>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined || NOT_PASSED.has(name)) continue;
    if (name.startsWith("LI_") || name.startsWith("PG")) out[name] = value;
  }
  return out;
}

/** Starts the run's detached leg; resolves once its setup committed (the run is linked to its session), or with why not. */
export async function startScheduledLeg(run: ScheduleRunRow, env: Readonly<Record<string, string | undefined>>, warm?: WarmSupervisor): Promise<LegStart> {
  let request;
  try {
    request = parseStoredRequest(run.id, run.request_json);
  } catch (error) {
    return { ok: false, message: (error as Error).message };
  }
  if (!existsSync(request.workdir)) return { ok: false, message: `its working directory ${request.workdir} does not exist on this host` };
  // A warm supervisor (li watch keeps one waiting) takes the same environment and directory, if one waits.
  const report = await startDetached(["agent", SCHEDULE_RUN_FLAG, run.id], { ...request.env, ...dispatcherEnv(env) }, { cwd: request.workdir, ...(warm ? { warm } : {}) });
  return report.ok ? { ok: true, sessionId: report.session_id } : { ok: false, message: report.message, ...(report.died ? { died: true } : {}) };
}
