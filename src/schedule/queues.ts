// Queues (SPEC §19): their defaults, `li queue set/pause/resume`, and the summary `li queue ls` prints.

import type { Ledger } from "../ledger/ledger.ts";
import type { QueueRow, QueueScope } from "../ledger/rows.ts";
import type { QueueCounts, QueuePatch } from "../ledger/schedule-store.ts";
import { UsageError } from "../util/errors.ts";
import { isSafeId, MAX_ID_LENGTH } from "../util/ids.ts";

/** A queue nobody configured: one run at a time on each host (as task-spooler's one slot), three leases at most. */
export const QUEUE_DEFAULTS = Object.freeze({ parallel: 1, scope: "host" as QueueScope, lease_attempts: 3 });

/** A queue name is a safe id (§3): it appears in logs, NOTIFY payloads and views. */
export function assertQueueName(name: string, flag = "--queue"): string {
  if (!isSafeId(name) || name.length > MAX_ID_LENGTH) {
    throw new UsageError(`${flag} ${JSON.stringify(name)}: a queue name is letters, digits and . _ : - (starting with a letter or digit), at most ${MAX_ID_LENGTH} characters`);
  }
  return name;
}

export function defaultQueueRow(name: string, now: number): QueueRow {
  return { name, ...QUEUE_DEFAULTS, paused: 0, created_at: now, updated_at: now };
}

/** Creates the queue with the defaults when absent, then applies `patch`; returns the row as it now is. */
export async function setQueue(ledger: Ledger, name: string, patch: QueuePatch): Promise<QueueRow> {
  assertQueueName(name, "queue");
  if (patch.parallel !== undefined && (!Number.isInteger(patch.parallel) || patch.parallel < 0)) throw new UsageError(`--parallel: expected a whole number ≥ 0 (0 = unlimited)`);
  if (patch.lease_attempts !== undefined && (!Number.isInteger(patch.lease_attempts) || patch.lease_attempts < 1)) throw new UsageError(`--lease-attempts: expected a whole number ≥ 1`);
  await ledger.ready();
  const now = ledger.now();
  return ledger.transact(async (tx) => {
    await tx.schedule.ensureQueue(defaultQueueRow(name, now));
    await tx.schedule.updateQueue(name, patch, now);
    return (await tx.schedule.getQueue(name))!;
  });
}

/** A queue with its counts, for `li queue ls`. */
export interface QueueSummary extends QueueRow, Omit<QueueCounts, "queue"> {}

export async function listQueues(ledger: Ledger): Promise<QueueSummary[]> {
  const [rows, counts] = await Promise.all([ledger.backend.schedule.listQueues(), ledger.backend.schedule.queueCounts()]);
  const byQueue = new Map(counts.map((c) => [c.queue, c]));
  return rows.map((row) => {
    const c = byQueue.get(row.name);
    return { ...row, running: c?.running ?? 0, queued: c?.queued ?? 0, waiting: c?.waiting ?? 0, oldest_queued_at: c?.oldest_queued_at ?? null };
  });
}
