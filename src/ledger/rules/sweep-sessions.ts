// How a sweep sees a session (SPEC §12), written once for every backend: the columns of its head and
// its legs in the order sweeps judge them, the current leg first.

import type { LegRow, RunningSession } from "../rows.ts";

export type SweepSessionHead = Omit<RunningSession, "legs">;

/** The head's columns over `sessions s` (portable SQL): the row's clocks, its current leg, its linked session's status. */
export const SWEEP_SESSION_HEAD = `s.id, s.status, s.started_at, s.updated_at, s.current_leg_id, s.status_reason_code, s.linked_session_id,
  (SELECT l.status FROM sessions l WHERE l.id = s.linked_session_id) AS linked_status`;

/** The legs of the heads' sessions a sweep reads: each session's current leg and every leg not ended. */
export const sweepLegsWhere = (sessionInList: string) => `${sessionInList} AND (g.id = s.current_leg_id OR g.ended_at IS NULL)`;

/** Each head with its legs: the current leg first (it is the one the row describes), then the others by seq. */
export function withSweepLegs(heads: readonly SweepSessionHead[], legs: readonly LegRow[]): RunningSession[] {
  const bySession = new Map<string, LegRow[]>();
  for (const leg of legs) {
    const list = bySession.get(leg.session_id) ?? [];
    list.push(leg);
    bySession.set(leg.session_id, list);
  }
  return heads.map((head) => {
    const list = bySession.get(head.id) ?? [];
    list.sort((a, b) => Number(b.id === head.current_leg_id) - Number(a.id === head.current_leg_id) || a.seq - b.seq);
    return { ...head, legs: list };
  });
}
