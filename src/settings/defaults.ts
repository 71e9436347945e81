// Defaults the start-up path needs without the settings parser (zod, ~6 ms): free of imports.

/** `--ledger-retry` / `agent.ledger_retry` when neither is given: two minutes (SPEC §17). */
export const DEFAULT_LEDGER_RETRY_SECONDS = 120;

/** `--kill-grace` / `agent.kill_grace` when neither is given: seconds between SIGTERM and SIGKILL when a leg is stopped (SPEC §8.7). */
export const DEFAULT_KILL_GRACE_SECONDS = 5;
