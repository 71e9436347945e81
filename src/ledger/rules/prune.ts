// What a prune batch must know about the schema, declared once for every backend (SPEC §12.5).

/** Columns elsewhere that name a session without owning it: nulled when the session goes, never a reason to fail. */
export const SOFT_REFERENCES: ReadonlyArray<{ table: string; column: string }> = [
  { table: "plays", column: "session_id" },
  { table: "sessions", column: "linked_session_id" },
];
