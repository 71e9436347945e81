// Validates everything `li agent` was asked before anything is written (SPEC §8, §16): flags, argv, contract.

import fs from "node:fs";
import path from "node:path";
import type { ArtifactContract } from "../contracts/artifacts.ts";
import { parseDuration, parseNonNegativeInt } from "../util/duration.ts";
import { ExitCode, UsageError } from "../util/errors.ts";
import { assertSafeId } from "../util/ids.ts";
import { DEFAULT_KILL_GRACE_SECONDS, DEFAULT_LEDGER_RETRY_SECONDS } from "../settings/defaults.ts";
import { resolveSaveDir, RUN_ID_ENV } from "./rundir-names.ts";

/** The flags of `li agent` as citty hands them over. */
export interface AgentArgs {
  resume?: string | undefined;
  notify?: string | undefined;
  timeout?: string | undefined;
  ledgerRetry?: string | undefined;
  killGrace?: string | undefined;
  stopLeftovers?: boolean | undefined;
  artifact?: string | string[] | undefined;
  profile?: string | undefined;
  playbook?: string | undefined;
  saveDir?: string | undefined;
  runId?: string | undefined;
  cwd?: string | undefined;
  baseRef?: string | undefined;
  invocation?: string | undefined;
  linkedSession?: string | undefined;
  autoResume?: string | undefined;
  resumeCommand?: string | undefined;
  passEnv?: string[] | undefined;
  evidenceGate?: boolean | undefined;
  detach?: boolean | undefined;
  persist?: boolean | undefined;
  json?: boolean | undefined;
}

export interface AgentRequest {
  argv: string[];
  /** `--resume-command`, split into words; null = the same argv. */
  resumeArgv: string[] | null;
  resume: string | null;
  notify: string | null;
  /** Seconds; null = no deadline. */
  timeout: number | null;
  /** Seconds to retry an unreachable ledger (setup, the final write) before spooling (§17); absent = the default. */
  ledgerRetry?: number;
  /** Seconds between SIGTERM and SIGKILL when the leg is stopped (§8.7). */
  killGrace?: number;
  /** A normal end stops what is still running in the leg, instead of only listing it. */
  stopLeftovers?: boolean;
  contract: ArtifactContract | null;
  contractWarnings: string[];
  saveDir: string | undefined;
  runId: string | undefined;
  /** Absolute `--cwd`, checked to be a directory; null = li's working directory, and no evidence gate by default. */
  cwd: string | null;
  baseRef: string | null;
  invocationId: string | null;
  linkedSessionId: string | null;
  autoResume: number;
  /** true = --evidence-gate, false = --no-evidence-gate, null = only with --cwd. */
  evidenceGate: boolean | null;
  /** `--pass-env NAME…`: credential variables the command keeps (§18). */
  passEnv?: string[];
  detach: boolean;
  persist: boolean;
  json: boolean;
}

export interface RequestContext {
  /** li's working directory. */
  workdir: string;
  /** `agent.timeout` from settings, used when --timeout is absent. */
  defaultTimeout?: number | null;
  /** `agent.ledger_retry` from settings, used when --ledger-retry is absent. */
  defaultLedgerRetry?: number;
  /** `agent.kill_grace` and `agent.stop_leftovers` from settings. */
  defaultKillGrace?: number;
  defaultStopLeftovers?: boolean;
  /** li's environment, read (not consumed) to refuse an unsafe LI_RUN_ID before anything is written. */
  env?: Readonly<Record<string, string | undefined>>;
}

function optionalId(value: string | undefined, flag: string): string | null {
  if (value === undefined) return null;
  return assertSafeId(value, flag);
}

/**
 * Throws UsageError (exit 2) for bad input, or with exit 78 when the environment prevents the start.
 * The contract and template modules load only when their flags are given (start-up is on every leg's path).
 */
export async function parseAgentRequest(args: AgentArgs, passthrough: readonly string[] | null, ctx: RequestContext): Promise<AgentRequest> {
  if (passthrough === null || passthrough.length === 0) throw new UsageError("li agent needs a command after -- (li agent [options] -- <command…>)");
  if (passthrough[0] === "") throw new UsageError("li agent: the command after -- is empty");
  const detach = args.detach === true;
  const persist = args.persist !== false;
  if (detach && !persist) throw new UsageError("--detach needs persistence: an id nobody can wait on is worse than an error (drop --no-persist)", ExitCode.unavailable);
  const timeout = args.timeout !== undefined ? parseDuration(args.timeout, "--timeout") : (ctx.defaultTimeout ?? null);
  const ledgerRetry = args.ledgerRetry !== undefined ? parseDuration(args.ledgerRetry, "--ledger-retry", { allowZero: true }) : (ctx.defaultLedgerRetry ?? DEFAULT_LEDGER_RETRY_SECONDS);
  const killGrace = args.killGrace !== undefined ? parseDuration(args.killGrace, "--kill-grace", { allowZero: true }) : (ctx.defaultKillGrace ?? DEFAULT_KILL_GRACE_SECONDS);
  const autoResume = args.autoResume !== undefined ? parseNonNegativeInt(args.autoResume, "--auto-resume") : 0;
  if (autoResume > 0 && timeout === null) throw new UsageError("--auto-resume needs --timeout: only a timed-out leg is resumed");
  let resumeArgv: string[] | null = null;
  if (args.resumeCommand !== undefined) {
    const { splitTemplate } = await import("../notify/argv.ts");
    try {
      resumeArgv = splitTemplate(args.resumeCommand);
    } catch (error) {
      throw new UsageError(`--resume-command: ${(error as Error).message}`);
    }
    if (resumeArgv.length === 0) throw new UsageError("--resume-command: no command given");
    if (autoResume === 0) throw new UsageError("--resume-command is only used with --auto-resume N");
  }
  const runId = args.runId !== undefined ? assertSafeId(args.runId, "--run-id") : undefined;
  const runIdFromEnv = ctx.env?.[RUN_ID_ENV];
  if (runId === undefined && runIdFromEnv) assertSafeId(runIdFromEnv, RUN_ID_ENV);
  if (args.saveDir !== undefined && args.saveDir.trim() === "") throw new UsageError("--save-dir: an empty path");
  let cwd: string | null = null;
  if (args.cwd !== undefined) {
    if (args.cwd === "") throw new UsageError("--cwd: an empty path");
    cwd = path.resolve(ctx.workdir, args.cwd);
    let isDir = false;
    try {
      isDir = fs.statSync(cwd).isDirectory();
    } catch {
      throw new UsageError(`--cwd ${args.cwd}: no such directory`, ExitCode.unavailable);
    }
    if (!isDir) throw new UsageError(`--cwd ${args.cwd}: not a directory`, ExitCode.unavailable);
  }
  const artifactFlags = args.artifact === undefined ? [] : Array.isArray(args.artifact) ? args.artifact : [args.artifact];
  const resume = args.resume ?? null;
  if (resume !== null && (artifactFlags.length > 0 || args.profile !== undefined || args.playbook !== undefined)) {
    throw new UsageError("--artifact, --profile and --playbook cannot be used with -r: the contract is fixed when the session starts");
  }
  const declared = artifactFlags.length > 0 || args.profile !== undefined || args.playbook !== undefined;
  const { contract, warnings } = declared
    ? (await import("../contracts/sources.ts")).loadContract({ projectDir: cwd ?? ctx.workdir, profile: args.profile, playbook: args.playbook, artifactFlags, cwd: ctx.workdir })
    : { contract: null, warnings: [] };
  if (contract !== null && args.saveDir !== undefined) {
    // An escape through --save-dir is known before any run directory or ledger exists: refuse it now, writing nothing.
    (await import("../contracts/artifacts.ts")).validateContract(contract, resolveSaveDir(args.saveDir, undefined, ctx.workdir));
  }
  return {
    argv: [...passthrough],
    resumeArgv,
    resume,
    notify: args.notify ?? null,
    timeout,
    ledgerRetry,
    killGrace,
    stopLeftovers: args.stopLeftovers ?? ctx.defaultStopLeftovers ?? false,
    contract,
    contractWarnings: warnings,
    saveDir: args.saveDir,
    runId,
    cwd,
    baseRef: args.baseRef ?? null,
    invocationId: optionalId(args.invocation, "--invocation"),
    linkedSessionId: optionalId(args.linkedSession, "--linked-session"),
    autoResume,
    evidenceGate: args.evidenceGate ?? null,
    passEnv: passEnvNames(args.passEnv ?? []),
    detach,
    persist,
    json: args.json === true,
  };
}

/** `--pass-env NAME`: an environment variable's name (a value there would be a secret in argv). */
function passEnvNames(names: readonly string[]): string[] {
  for (const name of names) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new UsageError(`--pass-env: expected a variable name such as PGPASSWORD, got ${JSON.stringify(name.slice(0, 40))}`);
  }
  return [...new Set(names)];
}
