// Defaults the start-up path needs without the settings parser (zod, ~6 ms): free of imports.

/** `--ledger-retry` / `agent.ledger_retry` when neither is given: two minutes (SPEC §17). */
export const DEFAULT_LEDGER_RETRY_SECONDS = 120;
