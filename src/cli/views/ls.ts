// What `li ls --json` prints, built once: the command and the page's /api/ls both call it (one shape).
import { isTerminal, type EntityKind } from "../../lifecycle/policy.ts";
import type { OpenedReads, RecentCursor } from "../../ledger/reads.ts";
import type { RecentRow } from "../../ledger/rows.ts";
import { spooledSessions } from "../../spool/waiting.ts";
import { cliPaths } from "../paths.ts";
import { pageRuns, runView, type RunView } from "../../schedule/view.ts";
import { argvOf } from "../render.ts";

/** The shortest prefix a user can type for an id: unique across every id kind, 8 characters at least. */
const MIN_PREFIX = 8;

export interface LsEntry {
  row: RecentRow;
  shortId: string;
  /** A session's branch by its shortest unique prefix (what `li agent -r` takes); null for other kinds. */
  shortBranch: string | null;
  ageSeconds: number;
  durationSeconds: number | null;
  argv: string[] | null;
  schedule: RunView | null;
}

export interface LsQuery {
  kinds: readonly EntityKind[];
  limit: number;
  status?: string;
  /** Only entities updated within this many seconds (on the ledger's clock). */
  sinceSeconds?: number;
  /** Only sessions whose current leg ran on this host (name or id). */
  host?: string;
  /** Only entities whose id, reason, a branch id or command holds this text. */
  text?: string;
  /** The page after this row (keyset paging). */
  after?: RecentCursor;
}

/** Age and duration of what ran last: a session's current leg, never its (resume-surviving) started_at. */
function legTimes(row: RecentRow, now: number): { age: number; duration: number | null } {
  if (row.kind === "session") {
    if (row.leg_started_at === null) return { age: now - row.updated_at, duration: null };
    return { age: now - row.leg_started_at, duration: (row.leg_ended_at ?? now) - row.leg_started_at };
  }
  const start = row.started_at ?? row.created_at;
  const end = row.ended_at ?? (isTerminal(row.kind, row.status) ? row.updated_at : now);
  return { age: now - start, duration: end - start };
}

/** Recent entities, newest first, with their times on the ledger's clock and this host's spooled sessions. */
export async function listEntries(ledger: OpenedReads, query: LsQuery): Promise<{ entries: LsEntry[]; spooled: ReadonlyMap<string, unknown> }> {
  const reads = ledger.reads;
  // The cutoff is on the ledger's clock, as updated_at is (on PostgreSQL the server's, known once connected).
  if (query.sinceSeconds !== undefined) await ledger.ready();
  const rows = await reads.listRecent({
    kinds: query.kinds,
    limit: query.limit,
    ...(query.status !== undefined ? { status: query.status } : {}),
    ...(query.host !== undefined ? { host: query.host } : {}),
    ...(query.text !== undefined ? { text: query.text } : {}),
    ...(query.after !== undefined ? { after: query.after } : {}),
    ...(query.sinceSeconds !== undefined ? { since: ledger.now() - query.sinceSeconds } : {}),
  });
  // Ages on the ledger's clock, read after the first query (on PostgreSQL it is measured then).
  const now = ledger.now();
  const spooled = await spooledSessions(cliPaths().home);
  // Every id's and branch's shortest prefix in one statement (a page of 50 was 100 round trips on PostgreSQL).
  const shared = await reads.sharedPrefixLengths([...new Set(rows.flatMap((r) => (r.branch_id === null ? [r.id] : [r.id, r.branch_id])))]);
  const shortest = (id: string) => id.slice(0, Math.max(MIN_PREFIX, (shared.get(id) ?? 0) + 1));
  // The page's scheduled runs, each read once; queued runs' places with each queue counted once for the
  // page, not once per run (flat with thousands queued).
  const page = await pageRuns(reads, rows.filter((r) => r.kind === "schedule_run").map((r) => r.id));
  const entries: LsEntry[] = [];
  for (const row of rows) {
    const { age, duration } = legTimes(row, now);
    const shortBranch = row.branch_id === null ? null : shortest(row.branch_id);
    // A scheduled run (§19): its queue, place and what it waits for; its command is its stored request's.
    const schedule = row.kind === "schedule_run" ? await runView(reads, row.id, page) : null;
    entries.push({ row, shortId: shortest(row.id), shortBranch, ageSeconds: age, durationSeconds: duration, argv: argvOf(row.leg_command) ?? schedule?.command ?? null, schedule });
  }
  return { entries, spooled };
}

/** `li ls --json`'s object (docs/json.md). */
export function lsJson(entries: readonly LsEntry[], spooled: ReadonlyMap<string, unknown>): { entities: Record<string, unknown>[] } {
  return {
    entities: entries.map((e) => ({
      id: e.row.id,
      short_id: e.shortId,
      kind: e.row.kind,
      status: e.row.status,
      reason: e.row.reason,
      created_at: e.row.created_at,
      updated_at: e.row.updated_at,
      age_seconds: e.ageSeconds,
      duration_seconds: e.durationSeconds,
      legs: e.row.leg_count,
      branch_id: e.row.branch_id,
      command: e.argv,
      // The current leg's host: on a shared ledger, where it ran (artifact paths are that host's).
      host_id: e.row.leg_host_id ?? null,
      host_name: e.row.leg_host_name ?? null,
      // What the current leg used, as the kernel counted it (§8.7); null while it runs.
      resource_use: e.row.kind === "session" ? resourceUse(e.row.leg_cpu_user_seconds, e.row.leg_cpu_system_seconds, e.row.leg_peak_rss_bytes) : null,
      // An outcome of this session waits in this host's spool (§17): the ledger does not show it yet.
      spooled: e.row.kind === "session" && spooled.has(e.row.id),
      // A scheduled run's queue, position, dependencies, lease and attempt (§19); null for other kinds.
      schedule: e.schedule,
    })),
  };
}

/** A leg's resource figures for --json; null when none was recorded. */
function resourceUse(user: number | null | undefined, system: number | null | undefined, peak: number | string | null | undefined): Record<string, number | null> | null {
  if (user == null && system == null && peak == null) return null;
  return { cpu_user_seconds: user ?? null, cpu_system_seconds: system ?? null, peak_rss_bytes: peak == null ? null : Number(peak) };
}
