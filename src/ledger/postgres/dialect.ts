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
  hints: { orderedJoin: "JOIN", byEntity: "", unindexed: (expression) => expression },
};

/** The views' statements (rules/views.ts): numbered parameters, NULLs typed as the columns they stand for. */
export const PG_VIEWS: ViewDialect = {
  placeholder: (position) => `$${position}`,
  typedNull: (type) => (type === "real" ? "NULL::float8" : type === "integer" ? "NULL::integer" : "NULL::text"),
};
