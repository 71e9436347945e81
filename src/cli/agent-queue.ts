// `li agent --queue NAME …` (SPEC §19): submit the leg as a scheduled run. With --detach the run's id is
// printed at once; in the foreground li waits its turn itself and runs the leg here. Also the supervisor
// side of a leased run (`--schedule-run ID`, started by li watch): the leg request comes from the ledger.
// A detached submit only validates and records: the waiting (schedule/foreground.ts), the run's hooks on
// its leg (schedule/leg.ts) and the leg itself load on the paths that use them (test/meta/startup-graph.test.ts).

import type { Ledger } from "../ledger/ledger.ts";
import type { ScheduleRunRow } from "../ledger/rows.ts";
import { hostId, hostName, readStartTicks } from "../host/proc.ts";
import type { AgentArgs, AgentRequest } from "../legs/request.ts";
import { parseAgentRequest } from "../legs/request.ts";
import type { Settings } from "../settings/settings.ts";
import type { WaitTrap } from "../schedule/foreground.ts";
import type { ScheduledLegHooks } from "../schedule/leg.ts";
import { agentArgsOf, captureEnv, legOptionsOf, parseStoredRequest, type ScheduledRequest } from "../schedule/request.ts";
import { labelsNobodyHas, submitRun } from "../schedule/submit.ts";
import { parseDuration, parseNonNegativeInt } from "../util/duration.ts";
import { UsageError } from "../util/errors.ts";
import { HEARTBEAT_INTERVAL_MS } from "../legs/heartbeat.ts";
import { writeOut } from "./io.ts";
import { safeText } from "../util/text.ts";
import { mark } from "../util/profile.ts";

/** The queue flags of `li agent`, as the words gave them. */
export interface QueueArgs {
  queue?: string | undefined;
  after: string[];
  needs: string[];
  passEnv: string[];
  retries?: string | undefined;
  retryDelay?: string | undefined;
  retryBackoff?: string | undefined;
  retryJitter?: boolean | undefined;
  lease?: string | undefined;
}

/** What li agent hands over: how to run one leg here, bound to a run (its helpers stay in agent.ts). */
export interface LegRunner {
  /** Runs `req` as a foreground leg with the run's hooks; resolves with li's exit code. */
  run(req: AgentRequest, hooks: ScheduledLegHooks, ledger: Ledger): Promise<number>;
  note(line: string): void;
  json: boolean;
}

/** The trap held while a foreground run waits: Ctrl-C or SIGTERM cancels the run (the leg installs its own). */
function waitTrap(): WaitTrap {
  const controller = new AbortController();
  let which: "SIGINT" | "SIGTERM" | null = null;
  const on = (name: "SIGINT" | "SIGTERM") => () => {
    which ??= name;
    controller.abort();
  };
  const onInt = on("SIGINT");
  const onTerm = on("SIGTERM");
  process.on("SIGINT", onInt);
  process.on("SIGTERM", onTerm);
  return {
    signal: controller.signal,
    which: () => which,
    release: () => {
      process.off("SIGINT", onInt);
      process.off("SIGTERM", onTerm);
    },
  };
}

/** li's exit code for a run that ended without a leg here (§8.1's codes; skipped is unsuccessful). */
const EXIT_BY_RUN_STATUS: Readonly<Record<string, number>> = Object.freeze({ completed: 0, failed: 1, timed_out: 124, cancelled: 143, skipped: 1 });

export async function submitQueued(args: AgentArgs, q: QueueArgs, passthrough: string[] | null, ctx: { open: () => Ledger; settings: Settings | null; workdir: string; runner: LegRunner }): Promise<number> {
  const queue = q.queue!;
  if (args.resume !== undefined) throw new UsageError("--queue starts a new leg: it cannot be used with -r");
  if (args.persist === false) throw new UsageError("--queue needs the ledger: it cannot be used with --no-persist");
  // The leg's own options are checked now, as the leg will check them: a bad --timeout is refused at submit.
  await parseAgentRequest({ ...args, detach: false }, passthrough, { workdir: ctx.workdir, env: process.env });
  mark("request validated");
  const detach = args.detach === true;
  const request: ScheduledRequest = {
    version: 1,
    argv: [...(passthrough ?? [])],
    workdir: ctx.workdir,
    env: captureEnv(process.env, q.passEnv),
    options: legOptionsOf(args),
    ...(detach ? {} : { foreground: { host_id: hostId(), pid: process.pid, start_ticks: readStartTicks(process.pid) } }),
  };
  const retries = q.retries === undefined ? 0 : parseNonNegativeInt(q.retries, "--retries");
  const retryDelay = q.retryDelay === undefined ? 0 : parseDuration(q.retryDelay, "--retry-delay", { allowZero: true });
  if (q.retryBackoff !== undefined && q.retryBackoff !== "fixed" && q.retryBackoff !== "exp") throw new UsageError(`--retry-backoff: ${JSON.stringify(q.retryBackoff)} is not one of fixed, exp`);
  const leaseSeconds = q.lease === undefined ? undefined : parseDuration(q.lease, "--lease");
  // The leg renews its lease with each heartbeat: a lease shorter than two of them would expire under a live leg.
  if (leaseSeconds !== undefined && leaseSeconds < (2 * HEARTBEAT_INTERVAL_MS) / 1000) {
    throw new UsageError(`--lease: at least ${(2 * HEARTBEAT_INTERVAL_MS) / 1000}s (the leg renews its lease with its heartbeat, every ${HEARTBEAT_INTERVAL_MS / 1000} s)`);
  }
  // A run waiting for its own leg is refused before the ledger is even opened (the service checks it too).
  for (const id of q.after) if (args.runId !== undefined && id === args.runId) throw new UsageError(`--after ${id}: a cycle (the run would wait for itself)`);
  const ledger = ctx.open();
  mark("ledger opened");
  for (const label of await labelsNobodyHas(ledger, q.needs)) {
    ctx.runner.note(`warning: --needs ${label}: no host has the label (a watcher offers labels with the watch.labels setting); the run waits until one does`);
  }
  // Held from before the submit: a Ctrl-C from the moment the run exists cancels it (waitAndRun releases it).
  const trap = detach ? null : waitTrap();
  const submitted = await submitRun(ledger, {
    queue,
    request,
    after: q.after,
    needs: q.needs,
    retries,
    retryDelay,
    ...(q.retryBackoff !== undefined ? { retryBackoff: q.retryBackoff as "fixed" | "exp" } : {}),
    retryJitter: q.retryJitter === true,
    ...(leaseSeconds !== undefined ? { leaseSeconds } : {}),
  }).catch((error: unknown) => {
    trap?.release();
    throw error;
  });
  mark("run recorded");
  if (detach) {
    if (ctx.runner.json) (await import("./output.ts")).writeJson({ run_id: submitted.id, queue: submitted.queue, status: submitted.status, dependencies: submitted.dependencies.map((d) => ({ kind: d.kind, id: d.id })) });
    else writeOut(`${submitted.id}\n`);
    return 0;
  }
  ctx.runner.note(`schedule run ${submitted.id}: ${submitted.status} in queue ${queue}; waiting for its turn`);
  const host = hostId();
  const [{ waitAndRun }, { scheduledLegHooks }] = await Promise.all([import("../schedule/foreground.ts"), import("../schedule/leg.ts")]);
  const result = await waitAndRun(
    {
      ledger,
      lessee: { hostId: host, hostName: hostName(), labels: ctx.settings?.watch.labels ?? [] },
      trap: waitTrap,
      log: ctx.runner.note,
      runLeg: async (run) => {
        const { args: legArgs, passthrough: argv } = agentArgsOf(parseStoredRequest(run.id, run.request_json));
        const req = await parseAgentRequest({ ...legArgs, ...(ctx.runner.json ? { json: true } : {}) }, argv, { workdir: ctx.workdir, defaultTimeout: ctx.settings?.agentTimeout ?? null, env: process.env });
        return ctx.runner.run(req, scheduledLegHooks(ledger, run.id, host, ctx.runner.note), ledger);
      },
    },
    submitted.id,
    trap ?? undefined,
  );
  if (result.kind === "ran") return result.exit;
  if (result.kind === "interrupted") {
    ctx.runner.note(`schedule run ${result.runId}: ${result.cancelled ? "cancelled" : "left as it was"} (${result.signal} while it waited); nothing started`);
    // §8.1's codes for an interrupted li: 130 for Ctrl-C, 143 for SIGTERM.
    return result.signal === "SIGINT" ? 130 : 143;
  }
  return ended(result.run, ctx.runner);
}

function ended(run: ScheduleRunRow, runner: LegRunner): number {
  runner.note(`schedule run ${safeText(run.id)}: ${run.status} (${safeText(run.status_reason_code ?? "-")})${run.status_reason_summary ? `: ${safeText(run.status_reason_summary)}` : ""}`);
  return EXIT_BY_RUN_STATUS[run.status] ?? 1;
}

/** The supervisor of a leased run's detached leg: its request, as stored, and the hooks binding the leg to the run. */
export async function leasedRunRequest(ledger: Ledger, runId: string, log: (line: string) => void): Promise<{ args: AgentArgs; passthrough: string[]; hooks: ScheduledLegHooks }> {
  const run = await ledger.backend.schedule.getRun(runId);
  if (!run) throw new UsageError(`--schedule-run ${runId}: no such schedule run`);
  const { args, passthrough } = agentArgsOf(parseStoredRequest(runId, run.request_json));
  const { scheduledLegHooks } = await import("../schedule/leg.ts");
  return { args, passthrough, hooks: scheduledLegHooks(ledger, runId, hostId(), log) };
}
