// Leasing (SPEC §19): one guarded write `queued → running` that names the host holding the run and until
// when, inside a transaction that first locks the queue's row (PostgreSQL), so two hosts never count the
// same free slot, and that skips candidates another host is leasing (SKIP LOCKED). On SQLite the
// transaction holds the database's write lock, which serializes every lease of every queue.

import type { Ledger } from "../ledger/ledger.ts";
import type { QueueRow, ScheduleRunRow } from "../ledger/rows.ts";
import { DEFAULT_LEASE_SECONDS } from "../ledger/rules/schedule.ts";
import { moveRun } from "./move.ts";

/** Who leases: this host, and the labels it offers. */
export interface Lessee {
  hostId: string;
  hostName?: string | null;
  labels: readonly string[];
}

export interface LeaseOptions {
  /** Only this run (a foreground `li agent --queue` waits for its own). */
  onlyRunId?: string;
  /** Candidates read per attempt; those whose --needs this host lacks are passed over. */
  page?: number;
  /** Whether this lessee may take a candidate at all (a watcher leaves a live foreground waiter's run alone). */
  mayTake?: (run: ScheduleRunRow) => boolean;
}

/** Whether a host with `labels` may take a run that needs `needs` (a JSON array, or null). */
export function coversNeeds(labels: readonly string[], needs: string | null): boolean {
  if (needs === null) return true;
  let wanted: unknown;
  try {
    wanted = JSON.parse(needs);
  } catch {
    return false;
  }
  return Array.isArray(wanted) && wanted.every((label) => typeof label === "string" && labels.includes(label));
}

/** Free slots in `queue` for this host now: null = unlimited, 0 = full or paused. */
async function freeSlots(count: (hostId: string | null) => Promise<number>, queue: QueueRow, hostId: string): Promise<number | null> {
  if (queue.paused) return 0;
  if (queue.parallel === 0) return null;
  const running = await count(queue.scope === "fleet" ? null : hostId);
  return Math.max(0, queue.parallel - running);
}

/**
 * Leases the oldest queued run of `queueName` that this host may take, within the queue's limit.
 * Returns the leased run (as it now is), or null when the queue is paused, full, or has nothing for this host.
 */
export async function leaseNext(ledger: Ledger, queueName: string, lessee: Lessee, options: LeaseOptions = {}): Promise<ScheduleRunRow | null> {
  const page = options.page ?? 50;
  return ledger.transact(async (tx, ctx) => {
    const queue = await tx.schedule.lockQueue(queueName);
    if (!queue) return null;
    const free = await freeSlots((host) => Promise.resolve(tx.schedule.countRunning(queueName, host)), queue, lessee.hostId);
    if (free === 0) return null;
    const candidates = await tx.schedule.leaseCandidates(queueName, page);
    const eligible = candidates.filter((c) => coversNeeds(lessee.labels, c.needs) && (options.mayTake?.(c) ?? true));
    let run: ScheduleRunRow | undefined;
    if (options.onlyRunId === undefined) run = eligible[0];
    else {
      // FIFO: a run waiting for itself takes a slot only when the runs ahead of it that this host could take leave one free.
      const at = eligible.findIndex((c) => c.id === options.onlyRunId);
      if (at !== -1 && (free === null || at < free)) run = eligible[at];
    }
    if (!run) return null;
    const now = ctx.now();
    const attempts = run.attempts + 1;
    const applied = await moveRun(tx, ctx, run.id, {
      from: ["queued"],
      to: "running",
      reasonCode: "schedule.running.leased",
      reasonSummary: `leased by ${lessee.hostName ?? lessee.hostId} (attempt ${attempts})`,
      evidence: [{ kind: "lease", host_id: lessee.hostId, host_name: lessee.hostName ?? null, attempt: attempts }],
      extra: {
        leased_by: lessee.hostId,
        lease_expires_at: now + (run.lease_seconds ?? DEFAULT_LEASE_SECONDS),
        attempts,
        started_at: now,
        session_id: null,
      },
    });
    if (!applied) return null;
    return tx.schedule.getRun(run.id);
  });
}
