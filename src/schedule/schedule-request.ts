// The leg request a cron schedule submits at each fire (SPEC §19): the command, the directory and the
// environment as they are when the schedule is added, in the form every scheduled run stores.

import path from "node:path";
import { parseDuration } from "../util/duration.ts";
import { UsageError } from "../util/errors.ts";
import { captureEnv, ScheduledRequestSchema, type ScheduledRequest } from "./request.ts";

export interface ScheduleRequestInput {
  argv: readonly string[] | null;
  cwd: string | undefined;
  timeout: string | undefined;
  passEnv: readonly string[];
  /** li's working directory (relative --cwd resolves against it). */
  workdir: string;
  env: Readonly<Record<string, string | undefined>>;
}

/** Validated before anything is written; a UsageError names the flag. */
export function scheduledRequest(input: ScheduleRequestInput): ScheduledRequest {
  if (input.argv === null || input.argv.length === 0 || input.argv[0] === "") throw new UsageError("li schedule add needs the command to run after -- (li schedule add NAME --cron EXPR --queue Q -- CMD…)");
  if (input.cwd !== undefined && input.cwd.trim() === "") throw new UsageError("--cwd: an empty path");
  if (input.timeout !== undefined) parseDuration(input.timeout, "--timeout");
  const options: ScheduledRequest["options"] = {};
  if (input.cwd !== undefined) options.cwd = path.resolve(input.workdir, input.cwd);
  if (input.timeout !== undefined) options.timeout = input.timeout;
  const request = { version: 1 as const, argv: [...input.argv], workdir: input.workdir, env: captureEnv(input.env, input.passEnv), options };
  return ScheduledRequestSchema.parse(request);
}
