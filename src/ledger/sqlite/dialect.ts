// SQLite's side of the statements built once for every backend (src/ledger/rules/): named parameters,
// JSON arrays through json_each, id lists as one JSON parameter, and the hints SQLite's planner needs
// (it keeps no statistics, so it is told the join order and which index reaches history by entity).

import type { OwedDialect } from "../rules/owed.ts";
import type { ViewDialect } from "../rules/views.ts";

export const SQLITE_DIALECT: OwedDialect = {
  placeholder: (name) => `$${name}`,
  jsonArrayHas: (column, value) => `EXISTS (SELECT 1 FROM json_each(${column}) j WHERE j.value = ${value})`,
  inList: (column, placeholder) => `${column} IN (SELECT value FROM json_each(${placeholder}))`,
  listValue: (ids) => JSON.stringify(ids),
  deliveryJoin: (transition, consumer) => `LEFT JOIN terminal_deliveries d ON d.transition_id = ${transition} AND d.consumer = ${consumer}`,
  eventsAboveWatermark: (k) => `JOIN status_transitions t ON t.terminal_event = 1 AND t.seq > ${k}.watermark`,
  hints: { orderedJoin: "CROSS JOIN", byEntity: "INDEXED BY status_transitions_entity_idx", unindexed: (expression) => `+${expression}` },
};

/** The views' statements (rules/views.ts): numbered parameters (`?1` may be used twice), untyped NULLs. */
export const SQLITE_VIEWS: ViewDialect = { placeholder: (position) => `?${position}`, typedNull: () => "NULL", caselessLike: "LIKE", asReference: (idColumn) => idColumn,
  idRows: (placeholder) => ({ from: `json_each(${placeholder}) q`, id: "q.value" }),
  idListValue: (ids) => JSON.stringify(ids),
};
