// The storage operations the sweeps need (SPEC §12): reads outside the write lock, re-checks and deletes inside it.

import type { LegDirs, RunningSession, SweepGuardRow } from "./rows.ts";
import type { Awaitable } from "../util/awaitable.ts";
import type { PruneSqlStatement } from "./rules/prune.ts";

/** Reads a sweep makes before deciding (outside the write lock). */
export interface SweepReads {
  /** Running sessions in id order after `afterId`, at most `limit`, each with its current and unended legs. */
  listRunningSessions(options: { afterId?: string | null; limit: number }): Promise<RunningSession[]>;
  /** One session as a sweep sees it, whatever its status; null when it does not exist. */
  getSweepSession(id: string): Promise<RunningSession | null>;
  /** Terminal sessions last updated before `cutoff`, in id order after `afterId`. */
  listPruneCandidates(options: { terminalStatuses: readonly string[]; cutoff: number; afterId: string | null; limit: number }): Promise<string[]>;
  /** How many sessions listPruneCandidates would walk in all: the estimate behind the prune's progress line. */
  countPruneCandidates(options: { terminalStatuses: readonly string[]; cutoff: number }): Promise<number>;
  /** Legs whose state_root or artifact_root is `dir` or lies inside it. */
  legsUsingDirectory(dir: string): Promise<LegDirs[]>;
  /**
   * Called between the batches of a bulk delete, outside any transaction: on SQLite a passive WAL
   * checkpoint, so the next writer's commit does not pay for copying the batches' pages (bench/prune.ts).
   */
  afterBulkBatch(): Promise<void>;
}

/** Writes and re-checks inside one write transaction. */
export interface SweepWrites {
  readSweepGuard(sessionId: string): Awaitable<SweepGuardRow | null>;
  /** One statement of a prune batch over `sessionIds`; returns the rows it touched or found. */
  pruneStatement(statement: PruneSqlStatement, sessionIds: readonly string[], options: { terminalStatuses: readonly string[]; cutoff: number }): Awaitable<PruneStatementResult>;
  /** The legs of the given sessions (for `--files`, read inside the batch). */
  legsOfSessions(sessionIds: readonly string[]): Awaitable<LegDirs[]>;
}

/** A statement's effect: rows changed, or (for the reads) the session ids it selected. */
export interface PruneStatementResult {
  changes: number;
  ids?: string[];
}
