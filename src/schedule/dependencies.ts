// Dependencies (SPEC §19): a run submitted with --after waits until every run, session or leg it names is
// terminal; all successful → queued, any other terminal → skipped (schedule.skipped.precondition, with
// evidence naming the dependency and its status), and a skipped run skips its own dependents in turn.

import type { Tx } from "../ledger/backend.ts";
import type { Ledger } from "../ledger/ledger.ts";
import type { ScheduleDepRow } from "../ledger/rows.ts";
import type { AppliedTransition, TransitionContext } from "../ledger/transition.ts";
import { isTerminal, SUCCESS_STATUS } from "../lifecycle/policy.ts";
import { moveRun } from "./move.ts";

type Verdict = { state: "waiting" } | { state: "met" } | { state: "failed"; dependency: ScheduleDepRow; status: string | null; via: string };

/** The newest attempt's status of a dependency (a run that was retried is judged by its last attempt). */
async function dependencyStatus(tx: Tx, dep: ScheduleDepRow): Promise<{ status: string | null; id: string }> {
  if (dep.depends_on_kind !== "schedule_run") {
    const row = await tx.getEntity(dep.depends_on_kind, dep.depends_on_id);
    return { status: row?.status ?? null, id: dep.depends_on_id };
  }
  let id = dep.depends_on_id;
  for (let hops = 0; hops < 10_000; hops++) {
    const child = await tx.schedule.chainChild(id);
    if (!child) break;
    id = child.id;
  }
  const row = await tx.schedule.getRun(id);
  return { status: row?.status ?? null, id };
}

async function verdict(tx: Tx, runId: string): Promise<Verdict> {
  let waiting = false;
  for (const dep of await tx.schedule.dependenciesOf(runId)) {
    const { status, id } = await dependencyStatus(tx, dep);
    // A dependency gone from the ledger (pruned) can never succeed any more.
    if (status === null) return { state: "failed", dependency: dep, status: null, via: id };
    if (!isTerminal(dep.depends_on_kind, status)) {
      waiting = true;
      continue;
    }
    if (status !== SUCCESS_STATUS[dep.depends_on_kind]) return { state: "failed", dependency: dep, status, via: id };
  }
  return waiting ? { state: "waiting" } : { state: "met" };
}

/** Moves a waiting run on when its dependencies decided, inside an open transaction. */
export async function settleDependenciesInTx(tx: Tx, ctx: TransitionContext, runId: string): Promise<AppliedTransition | null> {
  const row = await tx.readStatus("schedule_run", runId);
  if (row?.status !== "waiting_dependency") return null;
  const v = await verdict(tx, runId);
  if (v.state === "waiting") return null;
  if (v.state === "met") {
    return moveRun(tx, ctx, runId, { from: ["waiting_dependency"], to: "queued", reasonCode: "schedule.queued.dependencies_met", reasonSummary: "every run it waited for succeeded" });
  }
  const { dependency: dep, status, via } = v;
  const named = via === dep.depends_on_id ? `${dep.depends_on_kind} ${dep.depends_on_id}` : `${dep.depends_on_kind} ${dep.depends_on_id} (its last attempt ${via})`;
  return moveRun(tx, ctx, runId, {
    from: ["waiting_dependency"],
    to: "skipped",
    reasonCode: "schedule.skipped.precondition",
    reasonSummary: status === null ? `${named} is gone from the ledger` : `${named} ended ${status}`,
    evidence: [{ kind: "dependency", entity: dep.depends_on_kind, id: dep.depends_on_id, attempt_id: via, status }],
    extra: { ended_at: ctx.now() },
  });
}

/**
 * One pass over waiting runs: each whose dependencies decided moves on, and a skip is followed at once to
 * the runs that wait for the skipped one, so a failure skips a whole chain in one pass.
 */
export async function settleWaitingRuns(ledger: Ledger, limit = 500): Promise<{ queued: number; skipped: number }> {
  const summary = { queued: 0, skipped: 0 };
  const todo = (await ledger.backend.schedule.waitingRuns(limit)).map((r) => r.id);
  const seen = new Set<string>();
  while (todo.length > 0) {
    const id = todo.shift()!;
    if (seen.has(id)) continue;
    seen.add(id);
    const applied = await ledger.transact((tx, ctx) => settleDependenciesInTx(tx, ctx, id));
    if (!applied) continue;
    ledger.emitTerminal(applied);
    if (applied.status === "queued") summary.queued++;
    else summary.skipped++;
    for (const dependent of await ledger.backend.schedule.dependentsOf(id)) todo.push(dependent);
  }
  return summary;
}

/** The runs waiting for `id` (it just ended): settled at once, so a chain moves without waiting for a pass. */
export async function settleDependentsOf(ledger: Ledger, id: string): Promise<void> {
  const dependents = await ledger.backend.schedule.dependentsOf(id);
  for (const dependent of dependents) {
    const applied = await ledger.transact((tx, ctx) => settleDependenciesInTx(tx, ctx, dependent));
    if (!applied) continue;
    ledger.emitTerminal(applied);
    await settleDependentsOf(ledger, dependent);
  }
}
