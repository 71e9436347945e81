// `li state prune` (SPEC §12.5): delete old terminal sessions in batches, whole or nothing, locking before deciding.

import { z } from "zod";
import type { Awaitable } from "../util/awaitable.ts";
import type { Ledger } from "../ledger/ledger.ts";
import { PRUNE_BATCH_STATEMENTS, type PruneStatement } from "../ledger/rules/prune.ts";
import { SESSION_TERMINAL_STATUSES } from "../lifecycle/policy.ts";
import { orphanRunDirs, type OrphanRunDirSummary } from "./orphan-run-dirs.ts";
import { removeRunDirectories, type FilesReport } from "./prune-files.ts";
import { validateWith, type Sweep } from "./sweep.ts";

export interface PruneOptions {
  keepDays: number;
  dryRun: boolean;
  files: boolean;
  /** Sessions per transaction: bounds how long a concurrent writer waits (see docs/benchmarks.md). */
  batchSize: number;
}

/** Test seams: pause outside a batch's transaction, or inside it between two statements. */
export interface PruneHooks {
  beforeBatch?(candidates: readonly string[]): Awaitable<void>;
  afterStatement?(statement: PruneStatement, sessionIds: readonly string[]): Awaitable<void>;
}

export interface PruneEnv {
  /** RUNS_ROOT; `--files` removes nothing without it. */
  runsRoot?: string;
  hooks?: PruneHooks;
  /** Called once before the first batch and after every batch; its presence also asks for the estimate. */
  onProgress?: (progress: PruneProgress) => void;
}

/** How far a prune has got: for a progress line (`li state prune`, a foreground `li watch` on a terminal). */
export interface PruneProgress {
  batches: number;
  /** Batches the candidates counted at the start fill (an estimate: sessions may end or resume meanwhile). */
  estimatedBatches: number;
  /** Sessions deleted so far (or that a dry run would delete). */
  sessions: number;
  /** Monotonic milliseconds since the prune started. */
  elapsedMs: number;
}

export interface PruneCounts {
  sessions: number;
  transitions: number;
  legs: number;
  branches: number;
  messages: number;
  registrations: number;
  deliveries: number;
  consumers: number;
  soft_references: number;
}

export interface PruneSummary extends PruneCounts {
  dry_run: boolean;
  keep_days: number;
  cutoff: number;
  batches: number;
  /** Candidates kept because a registered consumer is still owed one of their terminal events. */
  skipped_owed: number;
  /** Candidates that were no longer terminal (or were updated) once the batch held the lock: a resume won. */
  skipped_reopened: number;
  /** Batches abandoned because a candidate survived its deletes. */
  rolled_back: number;
  files: FilesReport | null;
  /** With --files: run directories left by legs killed before their setup (the orphan sweep). */
  orphan_run_dirs: OrphanRunDirSummary | null;
}

const COUNTED: Partial<Record<PruneStatement, keyof PruneCounts>> = {
  delete_deliveries: "deliveries",
  delete_registration_consumers: "consumers",
  delete_registrations: "registrations",
  delete_messages: "messages",
  delete_legs: "legs",
  delete_branches: "branches",
  delete_transitions: "transitions",
  null_soft_references: "soft_references",
  delete_sessions: "sessions",
};

const schema = z.strictObject({
  keepDays: z.number().nonnegative().finite(),
  dryRun: z.boolean(),
  files: z.boolean(),
  batchSize: z.number().int().positive(),
});

const emptyCounts = (): PruneCounts => ({ sessions: 0, transitions: 0, legs: 0, branches: 0, messages: 0, registrations: 0, deliveries: 0, consumers: 0, soft_references: 0 });

/** Thrown inside a batch to roll it back; carries what the batch saw. */
class RollbackBatch extends Error {
  constructor(
    readonly why: "dry_run" | "survivors",
    readonly batch: BatchResult,
  ) {
    super(`prune batch rolled back: ${why}`);
  }
}

interface BatchResult {
  counts: PruneCounts;
  skippedOwed: number;
  skippedReopened: number;
  legs: Array<{ id: string; session_id: string; state_root: string; artifact_root: string }>;
}

async function runBatch(ledger: Ledger, candidates: readonly string[], now: number, cutoff: number, options: PruneOptions, hooks: PruneHooks | undefined): Promise<BatchResult> {
  const scope = { terminalStatuses: SESSION_TERMINAL_STATUSES, cutoff };
  return ledger.transact(async (tx) => {
    const batch: BatchResult = { counts: emptyCounts(), skippedOwed: 0, skippedReopened: 0, legs: [] };
    let ids: readonly string[] = candidates;
    for (const statement of PRUNE_BATCH_STATEMENTS) {
      switch (statement) {
        case "reread_status": {
          // Decided only now, under the lock the first statement took: a resume that committed first wins.
          const still = (await tx.pruneStatement(statement, ids, scope)).ids ?? [];
          batch.skippedReopened = ids.length - still.length;
          ids = still;
          break;
        }
        case "find_owed": {
          const owed = new Set((await tx.pruneStatement(statement, ids, scope)).ids ?? []);
          batch.skippedOwed = owed.size;
          ids = ids.filter((id) => !owed.has(id));
          break;
        }
        case "read_legs":
          batch.legs = options.files ? await tx.legsOfSessions(ids) : [];
          break;
        case "reread_survivors": {
          const survivors = (await tx.pruneStatement(statement, ids, scope)).ids ?? [];
          if (survivors.length > 0) throw new RollbackBatch("survivors", batch);
          break;
        }
        case "record_admin_event":
          if (batch.counts.sessions > 0 && !options.dryRun) {
            await tx.insertAdminEvent({
              id: ledger.newId(),
              event_type: "prune",
              entity_type: null,
              entity_id: null,
              actor: "li.state.prune",
              justification: `terminal sessions last updated before ${new Date(cutoff * 1000).toISOString()} (keep ${options.keepDays} days)`,
              payload: JSON.stringify({ ...batch.counts, skipped_owed: batch.skippedOwed, skipped_reopened: batch.skippedReopened, keep_days: options.keepDays, cutoff }),
              created_at: now,
            });
          }
          break;
        default: {
          if (ids.length === 0 && statement !== "lock_candidates") break;
          const result = await tx.pruneStatement(statement, ids, scope);
          const counted = COUNTED[statement];
          if (counted) batch.counts[counted] += result.changes;
        }
      }
      await hooks?.afterStatement?.(statement, ids);
    }
    // A dry run does every statement a real run does, then rolls back: its counts are the real ones.
    if (options.dryRun) throw new RollbackBatch("dry_run", batch);
    return batch;
  });
}

export const prune: Sweep<PruneOptions, PruneSummary> & { runOnce(ledger: Ledger, now: number, options: PruneOptions, env?: PruneEnv): Promise<PruneSummary> } = {
  name: "prune",
  defaults: { keepDays: 30, dryRun: false, files: false, batchSize: 100 },
  validate(input) {
    return validateWith(schema, { ...prune.defaults, ...input }, { keepDays: "--keep-days", dryRun: "--dry-run", files: "--files", batchSize: "batch size" });
  },
  async runOnce(ledger: Ledger, now: number, options: PruneOptions, env: PruneEnv = {}): Promise<PruneSummary> {
    const cutoff = now - options.keepDays * 86400;
    const summary: PruneSummary = { dry_run: options.dryRun, keep_days: options.keepDays, cutoff, batches: 0, skipped_owed: 0, skipped_reopened: 0, rolled_back: 0, files: null, orphan_run_dirs: null, ...emptyCounts() };
    const prunedLegs: BatchResult["legs"] = [];
    let afterId: string | null = null;
    const started = performance.now();
    let estimatedBatches = 0;
    const progress = () => env.onProgress?.({ batches: summary.batches, estimatedBatches: Math.max(estimatedBatches, summary.batches), sessions: summary.sessions, elapsedMs: performance.now() - started });
    if (env.onProgress) {
      estimatedBatches = Math.ceil((await ledger.backend.countPruneCandidates({ terminalStatuses: SESSION_TERMINAL_STATUSES, cutoff })) / options.batchSize);
      progress();
    }
    for (;;) {
      const candidates = await ledger.backend.listPruneCandidates({ terminalStatuses: SESSION_TERMINAL_STATUSES, cutoff, afterId, limit: options.batchSize });
      if (candidates.length === 0) break;
      afterId = candidates.at(-1)!;
      await env.hooks?.beforeBatch?.(candidates);
      summary.batches++;
      let batch: BatchResult;
      try {
        batch = await runBatch(ledger, candidates, now, cutoff, options, env.hooks);
      } catch (error) {
        if (!(error instanceof RollbackBatch)) throw error;
        if (error.why === "survivors") {
          summary.rolled_back++;
          continue;
        }
        batch = error.batch;
      }
      if (!options.dryRun) await ledger.backend.afterBulkBatch();
      for (const key of Object.keys(batch.counts) as (keyof PruneCounts)[]) summary[key] += batch.counts[key];
      summary.skipped_owed += batch.skippedOwed;
      summary.skipped_reopened += batch.skippedReopened;
      prunedLegs.push(...batch.legs);
      progress();
    }
    if (options.files) {
      // After commit only: a rolled-back batch must never have lost its files.
      summary.files = await removeRunDirectories(ledger, prunedLegs, env.runsRoot ?? null, { dryRun: options.dryRun });
      summary.orphan_run_dirs = await orphanRunDirs.runOnce(ledger, now, orphanRunDirs.validate({ dryRun: options.dryRun }), { runsRoot: env.runsRoot ?? null });
    }
    return summary;
  },
};

/** The line that ends `li state prune` (§12.5). */
export function pruneLine(s: PruneSummary): string {
  return `pruned sessions=${s.sessions} transitions=${s.transitions} legs=${s.legs} skipped_owed=${s.skipped_owed}`;
}
