// Expired leases (SPEC §19): a running run whose lease nobody renewed (the host holding it died, or its leg
// did before linking a session) goes back to queued (run.queued.lease_expired), its lease attempts counted;
// past the queue's lease_attempts it fails (run.failed.lease_attempts_exhausted). A run whose leg's session
// already ended is settled instead (settle.ts): its outcome is known.

import type { Ledger } from "../ledger/ledger.ts";
import type { AppliedTransition } from "../ledger/transition.ts";
import { moveRun } from "./move.ts";
import { QUEUE_DEFAULTS } from "./queues.ts";
import { settleInTx } from "./settle.ts";

export interface ExpirySummary {
  requeued: number;
  failed: number;
  settled: number;
}

/** Re-judges one run inside the write: its lease must still have run out by `now`. */
async function expireOne(ledger: Ledger, runId: string, now: number): Promise<AppliedTransition | null> {
  return ledger.transact(async (tx, ctx) => {
    await tx.readStatus("schedule_run", runId);
    const run = await tx.schedule.getRun(runId);
    if (!run || run.status !== "running" || run.lease_expires_at === null || run.lease_expires_at >= now) return null;
    const settled = await settleInTx(tx, ctx, run);
    if (settled) return settled;
    const queue = run.queue ? await tx.schedule.getQueue(run.queue) : null;
    const allowed = queue?.lease_attempts ?? QUEUE_DEFAULTS.lease_attempts;
    const evidence = [{ kind: "lease", host_id: run.leased_by, expired_at: run.lease_expires_at, attempts: run.attempts, lease_attempts: allowed, session_id: run.session_id }];
    if (run.attempts >= allowed) {
      return moveRun(tx, ctx, run.id, {
        from: ["running"],
        to: "failed",
        reasonCode: "run.failed.lease_attempts_exhausted",
        reasonSummary: `its lease expired ${run.attempts} times (queue ${run.queue}: lease_attempts ${allowed})`,
        evidence,
        extra: { ended_at: ctx.now(), lease_expires_at: null },
      });
    }
    return moveRun(tx, ctx, run.id, {
      from: ["running"],
      to: "queued",
      reasonCode: "run.queued.lease_expired",
      reasonSummary: `the lease of ${run.leased_by ?? "its host"} expired (attempt ${run.attempts} of ${allowed})`,
      evidence,
      extra: { leased_by: null, lease_expires_at: null, session_id: null },
    });
  });
}

/** Every run whose lease ran out by `now` (the ledger's clock). */
export async function expireLeases(ledger: Ledger, now: number, limit = 200): Promise<ExpirySummary> {
  const summary: ExpirySummary = { requeued: 0, failed: 0, settled: 0 };
  for (const run of await ledger.backend.schedule.expiredLeases(now, limit)) {
    const applied = await expireOne(ledger, run.id, now);
    if (!applied) continue;
    ledger.emitTerminal(applied);
    if (applied.reasonCode === "run.queued.lease_expired") summary.requeued++;
    else if (applied.reasonCode === "run.failed.lease_attempts_exhausted") summary.failed++;
    else summary.settled++;
  }
  return summary;
}
