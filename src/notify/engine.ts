// Claim → run → settle (SPEC §9.5), shared by the push path and the delivery engine.

import path from "node:path";
import type { Ledger } from "../ledger/ledger.ts";
import type { EventContext, OwedDelivery } from "../ledger/rows.ts";
import { renderArgv } from "./argv.ts";
import { envelopeFromContext, placeholderValues } from "./envelope.ts";
import { DEFAULT_BUDGET_MS, runHandler, type HandlerJob, type HandlerResult } from "./run.ts";

/** Failed attempts in all (a push counts as one) before a delivery is dead. */
export const MAX_ATTEMPTS = 5;
/** A claim outlasts the handler deadline by this much, so a live claimer is never overtaken. */
export const CLAIM_MARGIN_S = 5;
const BACKOFF_FIRST_S = 1;
const BACKOFF_MAX_S = 300;

/** Seconds before the next attempt after `attempts` failed ones: 1 s, doubling, at most 5 min. */
export function backoffSeconds(attempts: number): number {
  return Math.min(BACKOFF_MAX_S, BACKOFF_FIRST_S * 2 ** Math.max(0, attempts - 1));
}

export interface EngineOptions {
  /** Defaults to handlerHost(). */
  hostId?: string;
  /** Total time every handler of the pass shares. Defaults to 10 s. */
  budgetMs?: number;
  /** `$LI_HOME`: stderr goes under `$LI_HOME/notify/` when the event has no run directory. */
  liHome?: string;
}

export interface HandlerOutcome {
  transitionId: string;
  consumer: string;
  result: HandlerResult;
  /** What the delivery row became. */
  state: "acked" | "retry" | "dead" | "lost_claim";
}

export interface PassSummary {
  delivered: number;
  failed: number;
  dead: number;
  skipped_claimed: number;
  outcomes: HandlerOutcome[];
  /** Set when the pass itself failed (e.g. the ledger was unavailable); delivery retries later. */
  error?: string;
}

const safeName = (consumer: string) => consumer.replace(/[^A-Za-z0-9._-]/g, "_");

function stderrPath(ctx: EventContext, consumer: string, liHome: string | undefined): string | null {
  if (ctx.leg) return path.join(ctx.leg.state_root, `notify-${safeName(consumer)}.stderr`);
  if (liHome) return path.join(liHome, "notify", `${ctx.transition.id}.${safeName(consumer)}.stderr`);
  return null;
}

function parseArgv(text: string): string[] | null {
  try {
    const words: unknown = JSON.parse(text);
    return Array.isArray(words) && words.length > 0 && words.every((w) => typeof w === "string") ? (words as string[]) : null;
  } catch {
    return null;
  }
}

/**
 * Claims, runs and settles each of `owed`, at most `concurrency` at once (default: all together), each
 * delivery in its own claim and its own settlement: one acknowledged as its handler ends, not when the
 * batch does, so a claimer killed -9 leaves at most the handlers then running to be run again (§20).
 * With `sharedBudget` (the push, §9.4) every handler shares one deadline; else each gets the budget.
 */
export async function claimRunSettle(ledger: Ledger, owed: readonly OwedDelivery[], opts: EngineOptions & { concurrency?: number; sharedBudget?: boolean }): Promise<PassSummary> {
  const budgetMs = opts.budgetMs ?? DEFAULT_BUDGET_MS;
  const summary: PassSummary = { delivered: 0, failed: 0, dead: 0, skipped_claimed: 0, outcomes: [] };
  if (owed.length === 0) return summary;
  // Leases run on the backend's clock; each claim's `claimed_until` is the token its settlement guards on.
  const leaseSeconds = budgetMs / 1000 + CLAIM_MARGIN_S;
  const sharedDeadline = opts.sharedBudget ? Date.now() + budgetMs : null;
  const contexts = new Map<string, Promise<EventContext | null>>();
  const contextOf = (id: string) => {
    if (!contexts.has(id)) contexts.set(id, Promise.resolve(ledger.backend.notify.eventContext(id)));
    return contexts.get(id)!;
  };
  let next = 0;
  const worker = async () => {
    for (let index = next++; index < owed.length; index = next++) {
      const item = owed[index]!;
      const until = await ledger.transact(async (tx) => tx.notify.claim(item.transition_id, item.consumer, leaseSeconds));
      if (until === null) {
        summary.skipped_claimed++;
        continue;
      }
      const result = await runOne(item, await contextOf(item.transition_id), sharedDeadline ?? Date.now() + budgetMs, opts);
      summary.outcomes.push(await settle(ledger, { ...item, until }, result, summary));
    }
  };
  const workers = Math.max(1, Math.min(opts.concurrency ?? owed.length, owed.length));
  await Promise.all(Array.from({ length: workers }, worker));
  return summary;
}

async function runOne(item: OwedDelivery, ctx: EventContext | null, deadline: number, opts: EngineOptions): Promise<HandlerResult> {
  const argv = parseArgv(item.argv);
  if (!ctx || !argv) return { ok: false, why: "launch", error: "the event or the handler's argv can no longer be read", pid: null };
  const { envelope, extras } = envelopeFromContext(ctx);
  const job: HandlerJob = { argv: renderArgv(argv, placeholderValues(envelope, extras)), envelope, stderrPath: stderrPath(ctx, item.consumer, opts.liHome) };
  return runHandler(job, deadline).catch((error: unknown): HandlerResult => ({ ok: false, why: "launch", error: (error as Error).message, pid: null }));
}

/** Settles one claimed delivery by its handler's result, in a transaction of its own. */
async function settle(ledger: Ledger, item: OwedDelivery & { until: number }, result: HandlerResult, summary: PassSummary): Promise<HandlerOutcome> {
  return ledger.transact(async (tx) => {
    const at = ledger.now();
    let state: HandlerOutcome["state"];
    if (result.ok) {
      state = "acked";
      const changed = await tx.notify.settleClaim(item.transition_id, item.consumer, item.until, { state });
      if (changed === 0) state = "lost_claim";
      else summary.delivered++;
    } else {
      const row = await tx.notify.getDelivery(item.transition_id, item.consumer);
      const attempts = row?.attempts ?? MAX_ATTEMPTS;
      const settlement = attempts >= MAX_ATTEMPTS ? { state: "dead" as const, error: result.error } : { state: "retry" as const, error: result.error, retryAfterSeconds: backoffSeconds(attempts) };
      state = settlement.state;
      const changed = await tx.notify.settleClaim(item.transition_id, item.consumer, item.until, settlement);
      if (changed === 0) state = "lost_claim";
      else if (state === "dead") summary.dead++;
      else summary.failed++;
    }
    // One leg, one notice: a settled registration is retired, so later passes never read it again.
    if (item.scope === "leg" && (state === "acked" || state === "dead")) {
      await tx.notify.retireCallback(item.callback_id, at);
      await tx.notify.retireConsumer(item.consumer, at);
    }
    return { transitionId: item.transition_id, consumer: item.consumer, result, state };
  });
}
