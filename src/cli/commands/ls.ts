// `li ls`: recent entities, newest first, with the current leg's age and duration (§13).
import { runView, standing, type RunView } from "../../schedule/view.ts";
import { command, LEDGER_RETRY_ARG } from "../command.ts";
import { canonicalKind, ENTITY_KINDS, isTerminal, POLICIES, type EntityKind } from "../../lifecycle/policy.ts";
import type { RecentRow } from "../../ledger/rows.ts";
import { formatDuration, parseDuration, parsePositiveNumber } from "../../util/duration.ts";
import { UsageError } from "../../util/errors.ts";
import { statusColour, useColour } from "../colour.ts";
import { terminalWidth } from "../terminal.ts";
import { cut, displayWidth, table, writeJson } from "../output.ts";
import { safeText } from "../../util/text.ts";
import { writeOut } from "../io.ts";
import { argvOf, shellWords } from "../render.ts";
import { cliPaths } from "../paths.ts";
import { spooledSessions } from "../../spool/waiting.ts";

/** The shortest prefix a user can type for an id: unique across every id kind, 8 characters at least. */
const MIN_PREFIX = 8;

interface LsEntry {
  row: RecentRow;
  shortId: string;
  /** A session's branch by its shortest unique prefix (what `li agent -r` takes); null for other kinds. */
  shortBranch: string | null;
  ageSeconds: number;
  durationSeconds: number | null;
  argv: string[] | null;
  schedule: RunView | null;
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

/** The fewest columns the command keeps (when its text is that long), and the reason once cut. */
const COMMAND_MIN = 20;
const REASON_MIN = 12;

/**
 * How a table gives way to a narrow terminal so the command keeps COMMAND_MIN columns: each step is
 * taken only while the row is still too wide, in this order. The id, kind and status are never cut.
 */
const NARROWING = [
  { drop: "BRANCH" },
  { drop: "AGE" },
  { cut: "REASON" },
  { drop: "DURATION" },
  { drop: "LEGS" },
] as const;

/** The columns to show at `width`, and the reason cut to fit (null: whole), for rows of cells named by `names`. */
export function fitColumns(names: readonly string[], rows: readonly (readonly string[])[], width: number): { keep: string[]; reasonWidth: number | null } {
  const columnWidth = (name: string) => {
    const c = names.indexOf(name);
    return Math.max(displayWidth(name), ...rows.map((r) => displayWidth(safeText(r[c]!))));
  };
  const command = names.at(-1)!;
  const commandWant = Math.min(COMMAND_MIN, columnWidth(command));
  let keep = [...names];
  let reasonWidth: number | null = null;
  const used = () => keep.reduce((sum, name) => (name === command ? sum : sum + (name === "REASON" && reasonWidth !== null ? reasonWidth : columnWidth(name)) + 2), 0);
  for (const step of NARROWING) {
    const overflow = used() + commandWant - width;
    if (overflow <= 0) break;
    if ("drop" in step) keep = keep.filter((name) => name !== step.drop);
    else if (keep.includes(step.cut)) reasonWidth = Math.min(columnWidth(step.cut), Math.max(REASON_MIN, columnWidth(step.cut) - overflow));
  }
  return { keep, reasonWidth: reasonWidth !== null && reasonWidth < columnWidth("REASON") ? reasonWidth : null };
}

export default command({
  description: "List recent entities, newest first (by last update). Rows fit the terminal's width ($COLUMNS, else the terminal's own): BRANCH, then AGE are left out, then the reason is cut, so the command keeps 20 columns; the id is never cut",
  examples: ["li ls --kind=session --status=running", "li ls --since=2h --limit=10 --json"],
  ledger: "reads",
  args: {
    status: { type: "string", valueHint: "STATUS", complete: "statuses", description: "only this status" },
    kind: { type: "string", valueHint: "KIND", complete: "kinds", description: `only this kind (${ENTITY_KINDS.join(", ")})` },
    since: { type: "string", valueHint: "DURATION", description: "only entities updated within this DURATION (30m, 2h, 7d)" },
    limit: { type: "string", valueHint: "N", description: "at most N rows (default 50)" },
    json: { type: "boolean", description: "print JSON" },
    ...LEDGER_RETRY_ARG,
  },
  async run({ args, ledger: open }) {
    if (args._.length > 0) throw new UsageError(`li ls takes no ids; unexpected '${String(args._[0])}' (li show ID shows one)`);
    let kinds: readonly EntityKind[] = ENTITY_KINDS;
    if (args.kind !== undefined) {
      const kind = canonicalKind(args.kind.trim());
      if (!kind) throw new UsageError(`--kind: unknown kind '${args.kind}' (one of ${ENTITY_KINDS.join(", ")})`);
      kinds = [kind];
    }
    if (args.status !== undefined && !kinds.some((k) => POLICIES[k].statuses.has(args.status!))) {
      const valid = [...new Set(kinds.flatMap((k) => [...POLICIES[k].statuses]))];
      throw new UsageError(`--status: '${safeText(args.status)}' is not a status of ${kinds.length === 1 ? kinds[0] : "any kind"} (one of ${valid.join(", ")})`);
    }
    const limit = args.limit === undefined ? 50 : parsePositiveNumber(args.limit, "--limit");
    if (!Number.isInteger(limit)) throw new UsageError(`--limit: ${JSON.stringify(args.limit)} is not a whole number`);
    const sinceSeconds = args.since === undefined ? undefined : parseDuration(args.since, "--since");

    const ledger = open();
    const reads = ledger.reads;
    // The cutoff is on the ledger's clock, as updated_at is (on PostgreSQL the server's, known once connected).
    if (sinceSeconds !== undefined) await ledger.ready();
    const rows = await reads.listRecent({
      kinds,
      limit,
      ...(args.status !== undefined ? { status: args.status } : {}),
      ...(sinceSeconds !== undefined ? { since: ledger.now() - sinceSeconds } : {}),
    });
    // Ages on the ledger's clock, read after the first query (on PostgreSQL it is measured then).
    const now = ledger.now();
    const spooled = await spooledSessions(cliPaths().home);
    const shortest = async (id: string) => id.slice(0, Math.max(MIN_PREFIX, (await reads.sharedPrefixLength(id)) + 1));
    const entries: LsEntry[] = [];
    for (const row of rows) {
      const { age, duration } = legTimes(row, now);
      const shortBranch = row.branch_id === null ? null : await shortest(row.branch_id);
      // A scheduled run (§19): its queue, place and what it waits for; its command is its stored request's.
      const schedule = row.kind === "schedule_run" ? await runView(reads, row.id) : null;
      entries.push({ row, shortId: await shortest(row.id), shortBranch, ageSeconds: age, durationSeconds: duration, argv: argvOf(row.leg_command) ?? schedule?.command ?? null, schedule });
    }
    if (args.json) {
      writeJson({
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
      });
      return 0;
    }
    const colour = useColour();
    // Rows fit a known width: BRANCH, then AGE go, then the reason is cut, so the command keeps room;
    // the command (the last column) is cut last, the id never. Into a pipe (no width known) all is shown.
    const width = terminalWidth();
    const names = ["ID", "KIND", "STATUS", "REASON", "AGE", "DURATION", "LEGS", "BRANCH", "COMMAND"];
    const body = entries.map((e) => [
      e.shortId,
      e.row.kind,
      e.row.kind === "session" && spooled.has(e.row.id) ? `${e.row.status} (spooled)` : e.row.status,
      e.row.reason ?? "-",
      formatDuration(e.ageSeconds),
      e.durationSeconds === null ? "-" : formatDuration(e.durationSeconds),
      e.row.leg_count === null ? "-" : String(e.row.leg_count),
      e.shortBranch ?? "-",
      (e.schedule ? `[${standing(e.row.status, e.schedule)}] ` : "") + (e.argv ? shellWords(e.argv) : "-"),
    ]);
    const { keep, reasonWidth } = width === null ? { keep: names, reasonWidth: null } : fitColumns(names, body, width);
    const shown = keep.map((name) => names.indexOf(name));
    const header = keep.map((h) => ({ text: h, colour: "bold" as const }));
    const status = keep.indexOf("STATUS");
    const reason = keep.indexOf("REASON");
    const fitted = body.map((cells) => shown.map((c) => cells[c]!).map((text, c) => (c === reason && reasonWidth !== null ? cut(safeText(text), reasonWidth) : text)));
    writeOut(
      table(
        [header, ...fitted.map((cells, i) => cells.map((text, c) => (c === status ? { text, colour: statusColour(entries[i]!.row.kind, entries[i]!.row.status) } : text)))],
        { colour, ...(width !== null ? { maxWidth: width } : {}) },
      ),
    );
    return 0;
  },
});

/** A leg's resource figures for --json; null when none was recorded. */
function resourceUse(user: number | null | undefined, system: number | null | undefined, peak: number | string | null | undefined): Record<string, number | null> | null {
  if (user == null && system == null && peak == null) return null;
  return { cpu_user_seconds: user ?? null, cpu_system_seconds: system ?? null, peak_rss_bytes: peak == null ? null : Number(peak) };
}
