// The delivery engine (SPEC §9.5): one pass over everything this host's handlers are owed and nobody holds.

import type { Ledger } from "../ledger/ledger.ts";
import { claimRunSettle, MAX_ATTEMPTS, type EngineOptions, type PassSummary } from "./engine.ts";
import { DEFAULT_DELIVERY_CONCURRENCY } from "./concurrency.ts";
import { canonicalHost, handlerHost, handlerUid } from "./host.ts";

export interface DeliverOptions extends EngineOptions {
  /** At most this many (handler, event) pairs per pass. */
  limit?: number;
  /** At most this many handlers run at once (§20: what a kill -9 of the deliverer may run again). */
  concurrency?: number;
  /** Bury expired claims that used every attempt (a fleet-wide sweep: the elected watcher's, §14). Default true. */
  bury?: boolean;
}

/**
 * One pass: expired claims that used every attempt become dead; every (handler, event) pair owed to
 * an enabled handler of this host — a set-based anti-join over the handler's watermark, never a
 * cursor — is claimed unless someone holds it, run under one budget, and settled.
 */
export async function deliverOnce(ledger: Ledger, opts: DeliverOptions = {}): Promise<PassSummary> {
  const buried = opts.bury === false ? 0 : await ledger.transact(async (tx) => tx.notify.buryExhausted(MAX_ATTEMPTS, "the claim expired after the last attempt (the claimer died)"));
  const owed = await ledger.backend.notify.owedToHandlers({ hostId: opts.hostId === undefined ? handlerHost() : canonicalHost(opts.hostId), uid: handlerUid(), limit: opts.limit ?? 64 });
  const summary = await claimRunSettle(ledger, owed, { ...opts, concurrency: opts.concurrency ?? DEFAULT_DELIVERY_CONCURRENCY });
  summary.dead += buried;
  return summary;
}

/**
 * When the next delivery this pass left behind becomes free to take (a retry falls due, a claim expires), on
 * the ledger's clock; null: nothing is held back. With `bury` (the elected watcher) also any claim expiring on
 * any host, which may have to be buried. The watcher sleeps until then rather than a whole safety poll.
 */
export async function nextDeliveryDueAt(ledger: Ledger, after: number, opts: Pick<DeliverOptions, "hostId" | "bury"> = {}): Promise<number | null> {
  const hostId = opts.hostId === undefined ? handlerHost() : canonicalHost(opts.hostId);
  return ledger.backend.notify.nextTakeableAt({ hostId, uid: handlerUid(), anyClaim: opts.bury !== false, after });
}
