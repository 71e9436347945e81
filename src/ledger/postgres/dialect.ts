// PostgreSQL's side of the statements built once for every backend (src/ledger/rules/): numbered
// parameters, JSON arrays (stored as text) through jsonb_array_elements_text, id lists as one text[]
// parameter, and no planner hints (PostgreSQL plans from its statistics).

import type { OwedDialect } from "../rules/owed.ts";

export const PG_DIALECT: OwedDialect = {
  placeholder: (_name, position) => `$${position}`,
  jsonArrayHas: (column, value) => `${value} = ANY(SELECT jsonb_array_elements_text(${column}::jsonb))`,
  inList: (column, placeholder) => `${column} = ANY(${placeholder}::text[])`,
  listValue: (ids) => [...ids],
  hints: { orderedJoin: "JOIN", byEntity: "", unindexed: (expression) => expression },
};
