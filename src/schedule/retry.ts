// Retries (SPEC §19): a failed attempt waits its delay in retry_wait; then its next attempt is a new run
// chained to it (chain_parent_id, chain_depth + 1), queued through the same submit as any other run.

import type { Ledger } from "../ledger/ledger.ts";
import type { ScheduleRunRow } from "../ledger/rows.ts";
import { MAX_DURATION_SECONDS } from "../util/duration.ts";
import { parseStoredRequest } from "./request.ts";
import { prepareSubmit, writeSubmit, type SubmittedRun } from "./submit.ts";

/**
 * The wait before the next attempt: the base delay, doubled per attempt already made with `exp`; with
 * jitter, a random point in its upper half ("equal jitter": never sooner than half, so retries of many
 * runs failed together spread out without any retrying at once).
 */
export function retryDelaySeconds(run: Pick<ScheduleRunRow, "retry_delay" | "retry_backoff" | "retry_jitter" | "chain_depth">, random: () => number = Math.random): number {
  const base = run.retry_delay ?? 0;
  const grown = run.retry_backoff === "exp" ? base * 2 ** Math.min(run.chain_depth, 40) : base;
  const capped = Math.min(grown, MAX_DURATION_SECONDS);
  return run.retry_jitter ? capped / 2 + (random() * capped) / 2 : capped;
}

/**
 * Queues the next attempt of `parent` (in retry_wait, its delay passed): one transaction creates the chained
 * run and marks the parent retried, so two watchers never make two retries. Null when another made it first.
 */
export async function queueRetry(ledger: Ledger, parent: ScheduleRunRow): Promise<SubmittedRun | null> {
  const stored = parseStoredRequest(parent.id, parent.request_json);
  // A leg's run id is unique among legs: the next attempt's leg gets the given one with its attempt number.
  const runId = stored.options.runId;
  const request = runId === undefined ? stored : { ...stored, options: { ...stored.options, runId: `${runId.replace(/\.attempt-\d+$/, "")}.attempt-${parent.chain_depth + 2}` } };
  const prepared = await prepareSubmit(ledger, {
    queue: parent.queue ?? "default",
    request,
    needs: parent.needs ? (JSON.parse(parent.needs) as string[]) : [],
    retries: parent.retries - 1,
    retryDelay: parent.retry_delay ?? 0,
    retryBackoff: parent.retry_backoff ?? "fixed",
    retryJitter: parent.retry_jitter === 1,
    ...(parent.lease_seconds !== null ? { leaseSeconds: parent.lease_seconds } : {}),
    chain: { parentId: parent.id, depth: parent.chain_depth + 1 },
    reasonCode: "schedule.queued.retry",
    reasonSummary: `attempt ${parent.chain_depth + 2}, retrying ${parent.id}`,
    source: "system",
    actor: "li schedule",
  });
  return ledger
    .transact(async (tx, ctx) => {
      if ((await tx.schedule.takeRetry(parent.id)) === 0) throw new RetryTaken();
      return writeSubmit(tx, ledger, prepared, ctx);
    })
    .catch((error: unknown) => {
      if (error instanceof RetryTaken) return null;
      throw error;
    });
}

class RetryTaken extends Error {}

/** The newest attempt of the chain `run` starts or belongs to (itself when it was never retried). */
export async function chainTip(ledger: Ledger, run: ScheduleRunRow): Promise<ScheduleRunRow> {
  let tip = run;
  for (let hops = 0; hops < 10_000; hops++) {
    const child = await ledger.backend.schedule.chainChild(tip.id);
    if (!child) return tip;
    tip = child;
  }
  return tip;
}
