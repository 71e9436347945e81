// What a handler's envelope and placeholders are built from (SPEC §9.4), written once for every backend:
// the event, its entity, the session's first branch and the leg whose end the event was. Each backend
// runs these statements through its dialect; none holds the rule itself.

import { POLICIES, type EntityKind } from "../../lifecycle/policy.ts";
import type { EntityRow, EventContext, TransitionRow } from "../rows.ts";
import type { ViewDialect, ViewStatement } from "./views.ts";
import type { Awaitable } from "../../util/awaitable.ts";

type EventLeg = NonNullable<EventContext["leg"]>;
type One = <T>(statement: ViewStatement) => Awaitable<T | null>;

const LEG_COLUMNS = "id, run_id, state_root, artifact_root, exit_code, cpu_user_seconds, cpu_system_seconds, peak_rss_bytes";

/**
 * The leg a session's event names: the one recorded on the transition, so a notice delivered after a
 * resume made another leg current still names its own run; else the session's current leg; else its
 * latest. Three lookups by key rather than one ORDER BY over expressions (which sorts every leg of the session).
 */
function legLookups(d: ViewDialect, transition: TransitionRow): ViewStatement[] {
  const sid = transition.entity_id;
  const [p1, p2] = [d.placeholder(1), d.placeholder(2)];
  return [
    ...(transition.leg_id ? [{ sql: `SELECT ${LEG_COLUMNS} FROM legs WHERE id = ${p1} AND session_id = ${p2}`, params: [transition.leg_id, sid] }] : []),
    { sql: `SELECT ${LEG_COLUMNS} FROM legs WHERE id = (SELECT current_leg_id FROM sessions WHERE id = ${p1}) AND session_id = ${p1}`, params: [sid] },
    { sql: `SELECT ${LEG_COLUMNS} FROM legs WHERE session_id = ${p1} ORDER BY seq DESC LIMIT 1`, params: [sid] },
  ];
}

/** The context of `transition`; `one` runs a statement and returns its first row (null: none). */
export async function eventContextOf(d: ViewDialect, transition: TransitionRow, one: One): Promise<EventContext> {
  const p1 = d.placeholder(1);
  const table = POLICIES[transition.entity_type as EntityKind].table;
  const entity = await one<EntityRow>({ sql: `SELECT * FROM "${table}" WHERE id = ${p1}`, params: [transition.entity_id] });
  const sessionId = transition.entity_type === "session" ? transition.entity_id : entity && typeof entity.session_id === "string" ? entity.session_id : null;
  const branchId = sessionId ? ((await one<{ id: string }>({ sql: `SELECT id FROM branches WHERE session_id = ${p1} ORDER BY created_at LIMIT 1`, params: [sessionId] }))?.id ?? null) : null;
  let leg: EventLeg | null = null;
  if (transition.entity_type === "session") {
    for (const lookup of legLookups(d, transition)) if ((leg = await one<EventLeg>(lookup))) break;
  }
  return { transition, entity, branchId, leg };
}
