// The session settings li sends as startup parameters, named once: client.ts sends them, the classifier
// names them when a pooler refuses them (errors.ts), the PgBouncer test harness ignores them.

/**
 * What li sets on every session beyond application_name (which every pooler passes on): a pooler in
 * front of the server must pass these through or be told to ignore them (docs/postgres.md "Behind a
 * connection pooler"). A URL's `options` is sent too, when it has one.
 */
export const SESSION_STARTUP_PARAMETERS = [
  "search_path",
  "statement_timeout",
  "lock_timeout",
  "idle_in_transaction_session_timeout",
  "tcp_keepalives_idle",
  "tcp_keepalives_interval",
  "tcp_keepalives_count",
  "tcp_user_timeout",
  "jit",
] as const;

export type SessionStartupParameter = (typeof SESSION_STARTUP_PARAMETERS)[number];
