// How long a command waits for an unreachable ledger (SPEC §17): a command started while its PostgreSQL
// server is down (connection refused, shutting down, no answer) keeps connecting until its own deadline,
// counted from its first ledger call, instead of exiting 78 at once. A refusal (authentication, a
// missing database) is never waited for. Free of imports: the read path's start-up loads it.

/** How long read and maintenance commands wait when no `--ledger-retry` is given. */
export const DEFAULT_PATIENCE_SECONDS = 10;

export interface Patience {
  /** Seconds from the first ledger call during which an unreachable ledger is connected to again (0: one attempt; Infinity: until it answers). */
  seconds: number;
  /** Told once per outage, when an attempt failed as unreachable and the command goes on waiting. */
  onWait?: (error: Error) => void;
  /** Aborted (SIGINT, SIGTERM): the waiting ends at once with the last failure. */
  signal?: AbortSignal;
}

/** One attempt, no waiting: what a caller that retries on its own terms (li agent, li watch) asks for. */
export const NO_PATIENCE: Patience = Object.freeze({ seconds: 0 });
