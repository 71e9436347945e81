// How `li agent --detach` hands its request to the supervising li (SPEC §18): in the supervisor's own
// environment, never on its command line. A process's argv is public (`ps`, /proc/PID/cmdline, to every
// local user for the leg's life), so a `--db postgres://u:PASSWORD@…` or a token in a `--notify` template
// there would be read by all; its environment is readable only by its own user and root.

import { UsageError } from "../util/errors.ts";

/** Set by `li agent --detach` for the supervising li it starts (`fd:3`, detach.ts); never passed to the command. */
export const SUPERVISOR_ENV = "LI_SUPERVISOR_READY";

/** The supervisor's whole `li` argv as a JSON array of strings; its visible argv is only `li agent`. */
export const SUPERVISOR_ARGV_ENV = "LI_SUPERVISOR_ARGV";
/** What `ps` shows of a supervisor. */
export const SUPERVISOR_VISIBLE_ARGV: readonly string[] = Object.freeze(["agent"]);

/**
 * The argv this process is to run: its own, or a supervisor's as its parent handed it over (then removed
 * from the environment, so the command never sees it). Only with li's channel variable beside it and the
 * visible argv exactly `agent`; any other shape is refused.
 */
export function entryArgv(argv: readonly string[], env: Record<string, string | undefined>): string[] {
  const carried = env[SUPERVISOR_ARGV_ENV];
  if (carried === undefined) return [...argv];
  delete env[SUPERVISOR_ARGV_ENV];
  const refuse = (why: string) => new UsageError(`${SUPERVISOR_ARGV_ENV}: ${why}; it is li's own hand-over from li agent --detach to its supervisor`);
  if (env[SUPERVISOR_ENV] === undefined) throw refuse(`set without ${SUPERVISOR_ENV}`);
  if (argv.length !== SUPERVISOR_VISIBLE_ARGV.length || argv.some((word, i) => word !== SUPERVISOR_VISIBLE_ARGV[i])) throw refuse("set for a command other than the supervisor's");
  let parsed: unknown;
  try {
    parsed = JSON.parse(carried);
  } catch {
    throw refuse("not a JSON array");
  }
  if (!Array.isArray(parsed) || parsed.length === 0 || parsed[0] !== "agent" || !parsed.every((word) => typeof word === "string")) throw refuse("not the argv of li agent");
  return parsed as string[];
}
