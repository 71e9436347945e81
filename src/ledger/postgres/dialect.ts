// PostgreSQL's side of the statements built once for every backend (src/ledger/rules/): numbered
// parameters, JSON arrays (stored as text) through jsonb_array_elements_text, id lists as one text[]
// parameter, and no planner hints (PostgreSQL plans from its statistics).

import type { OwedDialect } from "../rules/owed.ts";
import type { ViewDialect } from "../rules/views.ts";

export const PG_DIALECT: OwedDialect = {
  placeholder: (_name, position) => `$${position}`,
  jsonArrayHas: (column, value) => `${value} = ANY(SELECT jsonb_array_elements_text(${column}::jsonb))`,
  inList: (column, placeholder) => `${column} = ANY(${placeholder}::text[])`,
  listValue: (ids) => [...ids],
  // A probe of the primary key per pair. A plain LEFT JOIN is hashed against the whole table when the
  // planner cannot tell how few events lie above a watermark (a parameter of each row); LIMIT 1 (the key
  // holds at most one row) keeps it from flattening the LATERAL subquery into that same join.
  deliveryJoin: (transition, consumer) =>
    `LEFT JOIN LATERAL (SELECT state, claimed_until, next_attempt_at, attempts FROM terminal_deliveries WHERE transition_id = ${transition} AND consumer = ${consumer} LIMIT 1) d ON true`,
  // Per handler, not one join the planner may hash: it cannot see a watermark when it plans, guesses a third
  // of history above it, and then reads all of history (seen: 64 ms at 100,000 rows). OFFSET 0 keeps the
  // LATERAL subquery from being flattened back into that join.
  eventsAboveWatermark: (k) => `JOIN LATERAL (SELECT * FROM status_transitions WHERE terminal_event = 1 AND seq > ${k}.watermark OFFSET 0) t ON true`,
  hints: { orderedJoin: "JOIN", byEntity: "", unindexed: (expression) => expression },
};

/** The views' statements (rules/views.ts): numbered parameters, NULLs typed as the columns they stand for. */
export const PG_VIEWS: ViewDialect = {
  placeholder: (position) => `$${position}`,
  typedNull: (type) => (type === "real" ? "NULL::float8" : type === "integer" ? "NULL::integer" : "NULL::text"),
  caselessLike: "ILIKE",
  asReference: (idColumn) => `(${idColumn} COLLATE "default")`,
  idRows: (placeholder) => ({ from: `unnest(${placeholder}::text[]) AS q(value)`, id: `(q.value COLLATE "C")` }),
  idListValue: (ids) => [...ids],
};
