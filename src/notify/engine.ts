// Claim → run → settle (SPEC §9.5), shared by the push path and the delivery engine.

import path from "node:path";
import type { Ledger } from "../ledger/ledger.ts";
import type { EventContext, OwedDelivery } from "../ledger/rows.ts";
import { renderArgv } from "./argv.ts";
import { envelopeFromContext, placeholderValues } from "./envelope.ts";
import { DEFAULT_BUDGET_MS, runHandlers, type HandlerJob, type HandlerResult } from "./run.ts";

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

/** Claims what it can of `owed`, runs the claimed handlers concurrently under one budget, and settles each. */
export async function claimRunSettle(ledger: Ledger, owed: readonly OwedDelivery[], opts: EngineOptions): Promise<PassSummary> {
  const budgetMs = opts.budgetMs ?? DEFAULT_BUDGET_MS;
  const summary: PassSummary = { delivered: 0, failed: 0, dead: 0, skipped_claimed: 0, outcomes: [] };
  if (owed.length === 0) return summary;

  // Leases run on the backend's clock; each claim's `claimed_until` is the token its settlement guards on.
  const leaseSeconds = budgetMs / 1000 + CLAIM_MARGIN_S;
  const claimed = await ledger.transact(async (tx) => {
    const won: (OwedDelivery & { until: number })[] = [];
    for (const item of owed) {
      const until = await tx.notify.claim(item.transition_id, item.consumer, leaseSeconds);
      if (until !== null) won.push({ ...item, until });
      else summary.skipped_claimed++;
    }
    return won;
  });
  if (claimed.length === 0) return summary;

  const contexts = new Map<string, EventContext | null>();
  const jobs: (HandlerJob | null)[] = [];
  for (const item of claimed) {
    if (!contexts.has(item.transition_id)) contexts.set(item.transition_id, await ledger.backend.notify.eventContext(item.transition_id));
    const ctx = contexts.get(item.transition_id);
    const argv = parseArgv(item.argv);
    if (!ctx || !argv) {
      jobs.push(null);
      continue;
    }
    const { envelope, extras } = envelopeFromContext(ctx);
    jobs.push({ argv: renderArgv(argv, placeholderValues(envelope, extras)), envelope, stderrPath: stderrPath(ctx, item.consumer, opts.liHome) });
  }
  const runnable = jobs.filter((job): job is HandlerJob => job !== null);
  const ran = await runHandlers(runnable, budgetMs);
  let next = 0;
  const results: HandlerResult[] = jobs.map((job) =>
    job === null ? { ok: false, why: "launch", error: "the event or the handler's argv can no longer be read", pid: null } : ran[next++]!,
  );

  await ledger.transact(async (tx) => {
    const at = ledger.now();
    for (const [index, item] of claimed.entries()) {
      const result = results[index]!;
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
      summary.outcomes.push({ transitionId: item.transition_id, consumer: item.consumer, result, state });
    }
  });
  return summary;
}
