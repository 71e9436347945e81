// What the views say about a scheduled run (SPEC §19): its queue and place in it, what it waits for, its
// lease, its attempt in a retry chain and the command it will run. Reads only, and light: li ls and li show
// load it on their fast path (no zod; the stored request is only read for its argv).

import type { LedgerReads } from "../ledger/reads.ts";
import type { DependencyKind, ScheduleRunRow } from "../ledger/rows.ts";

export interface RunView {
  queue: string | null;
  /** Queued runs of its queue ahead of it (0 = next); null unless queued. */
  position: number | null;
  needs: string[];
  /** Each dependency with its status now (a retried run's: its newest attempt's). */
  waits_for: { kind: DependencyKind; id: string; status: string | null }[];
  /** 1 for the first attempt; a retry is the next attempt, chained to the one before. */
  attempt: number;
  chain_parent_id: string | null;
  retried_as: string | null;
  session_id: string | null;
  leased_by: string | null;
  lease_expires_at: number | null;
  lease_attempts_used: number;
  retry_at: number | null;
  command: string[] | null;
}

function jsonList(text: string | null): string[] {
  if (text === null) return [];
  try {
    const value = JSON.parse(text) as unknown;
    return Array.isArray(value) ? value.filter((v): v is string => typeof v === "string") : [];
  } catch {
    return [];
  }
}

function argvOf(requestJson: string | null): string[] | null {
  if (requestJson === null) return null;
  try {
    const argv = (JSON.parse(requestJson) as { argv?: unknown }).argv;
    return Array.isArray(argv) && argv.every((a) => typeof a === "string") ? argv : null;
  } catch {
    return null;
  }
}

/** The newest attempt's status of a dependency that is a run (its retries followed). */
async function newestStatus(reads: LedgerReads, kind: DependencyKind, id: string): Promise<string | null> {
  if (kind !== "schedule_run") return ((await reads.entityRow(kind, id))?.status as string | null | undefined) ?? null;
  let current = await reads.schedule.getRun(id);
  for (let hops = 0; current && hops < 10_000; hops++) {
    const child = await reads.schedule.chainChild(current.id);
    if (!child) break;
    current = child;
  }
  return current?.status ?? null;
}

/** A page's scheduled runs, each read once, and the places of its queued ones (pageRuns). */
export interface PageRuns {
  runs: ReadonlyMap<string, ScheduleRunRow>;
  positions: ReadonlyMap<string, number>;
}

/**
 * A page of li ls's scheduled runs: each row read once, and the places of the queued ones by the end of
 * their queue they are nearest: each queue counted once, with its newest runs, in one statement; a run
 * found there stands at total - 1 - its index, so a page of recent runs costs the page whatever the queue
 * holds (10,000 queued: one count, not one per row). A run deeper in its queue than that tail has no place
 * here (runView counts the runs ahead of it).
 */
export async function pageRuns(reads: LedgerReads, ids: readonly string[]): Promise<PageRuns> {
  const runs = new Map<string, ScheduleRunRow>();
  const byQueue = new Map<string, string[]>();
  for (const id of ids) {
    const run = await reads.schedule.getRun(id);
    if (!run) continue;
    runs.set(id, run);
    if (run.status !== "queued" || run.queue === null) continue;
    byQueue.set(run.queue, [...(byQueue.get(run.queue) ?? []), run.id]);
  }
  const positions = new Map<string, number>();
  for (const [queue, members] of byQueue) {
    const { total, ids: tail } = await reads.schedule.queuedTail(queue, 4 * members.length + 64);
    const wanted = new Set(members);
    tail.forEach((id, index) => {
      if (wanted.has(id)) positions.set(id, Math.max(0, total - 1 - index));
    });
  }
  return { runs, positions };
}

/** What the views show of one run; `page` (from pageRuns) saves reading it again and counting the runs ahead of it. */
export async function runView(reads: LedgerReads, id: string, page?: PageRuns): Promise<RunView | null> {
  const run = page?.runs.get(id) ?? (await reads.schedule.getRun(id));
  if (!run) return null;
  const known = page?.positions.get(id);
  const [deps, child, ahead] = await Promise.all([
    reads.schedule.dependenciesOf(id),
    reads.schedule.chainChild(id),
    run.status === "queued" && run.queue !== null ? (known !== undefined ? Promise.resolve(known) : reads.schedule.queuedAhead(run.queue, run.created_at, run.id)) : Promise.resolve(null),
  ]);
  const waits_for = [];
  for (const d of deps) waits_for.push({ kind: d.depends_on_kind, id: d.depends_on_id, status: await newestStatus(reads, d.depends_on_kind, d.depends_on_id) });
  return {
    queue: run.queue,
    position: ahead,
    needs: jsonList(run.needs),
    waits_for,
    attempt: Number(run.chain_depth) + 1,
    chain_parent_id: run.chain_parent_id,
    retried_as: child?.id ?? null,
    session_id: run.session_id,
    leased_by: run.leased_by,
    lease_expires_at: run.lease_expires_at,
    lease_attempts_used: Number(run.attempts),
    retry_at: run.retry_at,
    command: argvOf(run.request_json),
  };
}

/** One short phrase for li ls: where the run stands in its queue, or what it waits for. */
export function standing(status: string, view: RunView): string {
  const queue = view.queue ?? "-";
  if (status === "queued") return `queue ${queue}, #${(view.position ?? 0) + 1}${view.needs.length > 0 ? `, needs ${view.needs.join(",")}` : ""}`;
  if (status === "waiting_dependency") {
    const pending = view.waits_for.filter((d) => d.status === null || !["completed", "merged"].includes(d.status));
    return `queue ${queue}, waits for ${pending.map((d) => d.id.slice(0, 8)).join(",") || "its dependencies"}`;
  }
  if (status === "retry_wait") return view.retried_as ? `retried as ${view.retried_as.slice(0, 8)}` : `queue ${queue}, attempt ${view.attempt + 1} due`;
  if (status === "running") return `queue ${queue}, leased by ${view.leased_by ?? "-"}`;
  return `queue ${queue}`;
}

/**
 * A schedule run row as the views show it: its stored request's environment by names only. The values
 * are the submitter's (a --pass-env credential among them) and only the leg that runs gets them (§18).
 */
export function withoutEnvValues<R extends Record<string, unknown>>(row: R): R {
  const text = row.request_json;
  if (typeof text !== "string") return row;
  try {
    const request = JSON.parse(text) as { env?: Record<string, unknown> };
    const names = request.env && typeof request.env === "object" ? Object.keys(request.env).sort() : [];
    const { env: _env, ...rest } = request;
    return { ...row, request_json: JSON.stringify({ ...rest, env_names: names }) };
  } catch {
    return { ...row, request_json: null };
  }
}
