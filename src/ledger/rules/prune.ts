// What a prune batch is, declared once for every backend (SPEC §12.5): its statements in the order the
// prune issues them, and what it must know about the schema.

/** The statements of a batch in the order issued: lock, re-read, then what belongs to the session, the session last. */
export const PRUNE_BATCH_STATEMENTS = [
  "lock_candidates",
  "reread_status",
  "find_owed",
  "read_legs",
  "delete_deliveries",
  "delete_registration_consumers",
  "delete_registrations",
  "delete_messages",
  "delete_legs",
  "delete_branches",
  "delete_transitions",
  "null_soft_references",
  "delete_sessions",
  "reread_survivors",
  "record_admin_event",
] as const;
export type PruneStatement = (typeof PRUNE_BATCH_STATEMENTS)[number];

/** The prune's own steps (through other backend calls); the backend runs every other statement as SQL. */
export const PRUNE_OWN_STEPS = ["read_legs", "record_admin_event"] as const satisfies readonly PruneStatement[];
export type PruneSqlStatement = Exclude<PruneStatement, (typeof PRUNE_OWN_STEPS)[number]>;

/** Columns elsewhere that name a session without owning it: nulled when the session goes, never a reason to fail. */
export const SOFT_REFERENCES: ReadonlyArray<{ table: string; column: string }> = [
  { table: "plays", column: "session_id" },
  { table: "sessions", column: "linked_session_id" },
];
