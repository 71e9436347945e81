// The leg request a scheduled run stores (SPEC §19): argv, the directory li agent ran in, the environment
// allowlist and the leg's own options, validated with zod when written and again when read back.

// zod's mini build (the same validator, without the method-chaining classes and the JSON Schema
// converter): it loads in a third of the time, and both sides of a dispatch load it, the submit and the
// leased run's supervisor. Its messages are zod's English ones, as the full build gives them.
import * as z from "zod/mini";
import type { AgentArgs } from "../legs/request.ts";
import { UsageError } from "../util/errors.ts";

z.config(z.locales.en());

/** The leg options a queued run keeps, as `li agent` was given them (re-validated by the leg that runs it). */
export const LegOptionsSchema = z.partial(
  z.strictObject({
    notify: z.string(),
    timeout: z.string(),
    ledgerRetry: z.string(),
    artifact: z.array(z.string()),
    profile: z.string(),
    playbook: z.string(),
    saveDir: z.string(),
    runId: z.string(),
    cwd: z.string(),
    baseRef: z.string(),
    invocation: z.string(),
    linkedSession: z.string(),
    autoResume: z.string(),
    resumeCommand: z.string(),
    evidenceGate: z.boolean(),
    passEnv: z.array(z.string()),
  }),
);

export type LegOptions = z.infer<typeof LegOptionsSchema>;

export const ScheduledRequestSchema = z.strictObject({
  version: z.literal(1),
  argv: z.array(z.string()).check(z.minLength(1, "a command is required")),
  /** Absolute: where li agent ran; relative paths among the options resolve against it. */
  workdir: z.string().check(z.startsWith("/", "must be an absolute path")),
  /** The variables the command gets: the allowlist below plus --pass-env, captured at submit. */
  env: z.record(z.string().check(z.regex(/^[A-Za-z_][A-Za-z0-9_]*$/)), z.string()),
  options: LegOptionsSchema,
  /**
   * Submitted by a foreground `li agent --queue`, which waits its turn and runs the leg itself: a watcher
   * leaves such a run alone while that li process lives (it takes it once the process is gone, on its host).
   */
  foreground: z.optional(z.strictObject({ host_id: z.string(), pid: z.number().check(z.int(), z.positive()), start_ticks: z.nullable(z.number().check(z.int())) })),
});

export type ScheduledRequest = z.infer<typeof ScheduledRequestSchema>;

/**
 * Variables a queued leg keeps from its submitter without being asked: what a command needs to find
 * programs and speak the user's language. Nothing li or a database client reads (LI_DB, PG*): credentials
 * travel only when named with --pass-env (§18).
 */
export const DEFAULT_ENV_ALLOWLIST: readonly string[] = Object.freeze(["PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TERM", "TMPDIR"]);

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The submitter's variables a queued leg will run with: the allowlist, LC_*, and each --pass-env name. */
export function captureEnv(env: Readonly<Record<string, string | undefined>>, passEnv: readonly string[] = []): Record<string, string> {
  for (const name of passEnv) if (!ENV_NAME.test(name)) throw new UsageError(`--pass-env ${JSON.stringify(name)}: not a variable name`);
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) continue;
    if (DEFAULT_ENV_ALLOWLIST.includes(name) || name.startsWith("LC_") || passEnv.includes(name)) out[name] = value;
  }
  return out;
}

/** The stored request, checked; a row someone else wrote that does not parse is refused naming the run. */
export function parseStoredRequest(runId: string, json: string | null): ScheduledRequest {
  if (json === null) throw new UsageError(`schedule run ${runId} holds no leg request (it was not submitted with li agent --queue)`);
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    throw new UsageError(`schedule run ${runId}: its stored leg request is not JSON`);
  }
  const parsed = ScheduledRequestSchema.safeParse(value);
  if (!parsed.success) throw new UsageError(`schedule run ${runId}: its stored leg request is invalid (${firstIssue(parsed.error)})`);
  return parsed.data;
}

/** `path: message` of a zod error's first issue. */
export function firstIssue(error: z.core.$ZodError): string {
  const issue = error.issues[0];
  if (!issue) return "invalid";
  return issue.path.length > 0 ? `${issue.path.join(".")}: ${issue.message}` : issue.message;
}

/** The leg options a queued run keeps, from `li agent`'s flags (what does not describe the leg itself stays out). */
export function legOptionsOf(args: AgentArgs): LegOptions {
  const options: LegOptions = {};
  const copy = <K extends keyof LegOptions>(key: K, value: LegOptions[K] | undefined) => {
    if (value !== undefined) options[key] = value;
  };
  copy("notify", args.notify);
  copy("timeout", args.timeout);
  copy("ledgerRetry", args.ledgerRetry);
  copy("artifact", args.artifact === undefined ? undefined : Array.isArray(args.artifact) ? args.artifact : [args.artifact]);
  copy("profile", args.profile);
  copy("playbook", args.playbook);
  copy("saveDir", args.saveDir);
  copy("runId", args.runId);
  copy("cwd", args.cwd);
  copy("baseRef", args.baseRef);
  copy("invocation", args.invocation);
  copy("linkedSession", args.linkedSession);
  copy("autoResume", args.autoResume);
  copy("resumeCommand", args.resumeCommand);
  copy("evidenceGate", args.evidenceGate);
  copy("passEnv", args.passEnv);
  if (options.artifact?.length === 0) delete options.artifact;
  if (options.passEnv?.length === 0) delete options.passEnv;
  return options;
}

/** `li agent`'s flags and command for the leg a stored request describes. */
export function agentArgsOf(request: ScheduledRequest): { args: AgentArgs; passthrough: string[] } {
  return { args: { ...request.options }, passthrough: [...request.argv] };
}
