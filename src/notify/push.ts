// Push (SPEC §9.4): the process that applied a terminal transition runs this host's matching handlers at once.

import type { Ledger } from "../ledger/ledger.ts";
import type { AppliedTransition } from "../ledger/transition.ts";
import type { EngineOptions, PassSummary } from "./engine.ts";
import { canonicalHost, handlerHost, handlerUid } from "./host.ts";

/** More handlers than this on one event are left to the delivery engine. */
const PUSH_LIMIT = 256;

/**
 * Call after the transition's transaction committed (never inside it). Claims the deliveries of the
 * handlers of this host that match the event, runs them concurrently under one budget, acknowledges
 * each that exits 0 and records the rest for retry. A handler's failure never reaches the caller.
 * Bulk sweeps must not call this: they leave delivery to `deliverOnce`.
 */
export async function pushTerminal(
  ledger: Ledger,
  event: Pick<AppliedTransition, "transitionId" | "terminalEvent">,
  opts: EngineOptions = {},
): Promise<PassSummary> {
  const empty: PassSummary = { delivered: 0, failed: 0, dead: 0, skipped_claimed: 0, outcomes: [] };
  if (!event.terminalEvent) return empty;
  try {
    const owed = await ledger.backend.notify.owedToHandlers({
      hostId: opts.hostId === undefined ? handlerHost() : canonicalHost(opts.hostId),
      uid: handlerUid(),
      transitionId: event.transitionId,
      limit: PUSH_LIMIT,
    });
    // Most legs have no handler: the engine (argv, envelope, handler runs) loads only when one is owed.
    if (owed.length === 0) return empty;
    const { claimRunSettle } = await import("./engine.ts");
    return await claimRunSettle(ledger, owed, { ...opts, sharedBudget: true });
  } catch (error) {
    // The transition is committed whatever happens here; what push could not do, delivery will.
    return { ...empty, error: `push failed: ${(error as Error).message}` };
  }
}
