// `li ls`: recent entities, newest first, with the current leg's age and duration (§13).
import { command } from "../command.ts";
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

/** Columns from which a terminal counts as wide enough for the BRANCH column. */
const WIDE = 110;

interface LsEntry {
  row: RecentRow;
  shortId: string;
  /** A session's branch by its shortest unique prefix (what `li agent -r` takes); null for other kinds. */
  shortBranch: string | null;
  ageSeconds: number;
  durationSeconds: number | null;
  argv: string[] | null;
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

const STATUS_COLUMN = 2;
const REASON_COLUMN = 3;
/** The fewest columns the command keeps, and the reason, before a row may run past the width. */
const COMMAND_MIN = 12;
const REASON_MIN = 12;

/**
 * Cuts the REASON cells (with …) when the command alone cannot make a row fit: reason codes run to ~30
 * characters, so on an 80-column terminal a `schedule_run` or `completed_empty` row would otherwise
 * wrap. The id and the short columns are never cut; below ~75 columns a row may still run past.
 */
function cutReasons(rows: string[][], width: number): string[][] {
  if (rows.length === 0) return rows;
  const last = rows[0]!.length - 1;
  const columnWidth = (c: number) => Math.max(c === REASON_COLUMN ? "REASON".length : 0, ...rows.map((r) => displayWidth(safeText(r[c]!))));
  let fixed = 0;
  for (let c = 0; c < last; c++) fixed += columnWidth(c) + 2;
  const commandWant = Math.min(COMMAND_MIN, Math.max(...rows.map((r) => displayWidth(safeText(r[last]!)))));
  const overflow = fixed + commandWant - width;
  const reasonWidth = columnWidth(REASON_COLUMN);
  if (overflow <= 0 || reasonWidth <= REASON_MIN) return rows;
  const allowed = Math.max(REASON_MIN, reasonWidth - overflow);
  return rows.map((r) => r.map((cell, c) => (c === REASON_COLUMN ? cut(safeText(cell), allowed) : cell)));
}

export default command({
  description: "List recent entities, newest first (by last update). Rows fit the terminal's width ($COLUMNS, else the terminal's own) by cutting the command, then the reason, never the id; BRANCH is shown when there is room",
  examples: ["li ls --kind=session --status=running", "li ls --since=2h --limit=10 --json"],
  ledger: "reads",
  args: {
    status: { type: "string", valueHint: "STATUS", complete: "statuses", description: "only this status" },
    kind: { type: "string", valueHint: "KIND", complete: "kinds", description: `only this kind (${ENTITY_KINDS.join(", ")})` },
    since: { type: "string", valueHint: "DURATION", description: "only entities updated within this DURATION (30m, 2h, 7d)" },
    limit: { type: "string", valueHint: "N", description: "at most N rows (default 50)" },
    json: { type: "boolean", description: "print JSON" },
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
      throw new UsageError(`--status: '${args.status}' is not a status of ${kinds.length === 1 ? kinds[0] : "any kind"}`);
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
      entries.push({ row, shortId: await shortest(row.id), shortBranch, ageSeconds: age, durationSeconds: duration, argv: argvOf(row.leg_command) });
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
          // An outcome of this session waits in this host's spool (§17): the ledger does not show it yet.
          spooled: e.row.kind === "session" && spooled.has(e.row.id),
        })),
      });
      return 0;
    }
    const colour = useColour();
    // Rows fit a known width by cutting the command (the last column), never the id; BRANCH only where
    // there is room for it. Into a pipe (no width known) nothing is cut and BRANCH is shown.
    const width = terminalWidth();
    const withBranch = width === null || width >= WIDE;
    const header = ["ID", "KIND", "STATUS", "REASON", "AGE", "DURATION", "LEGS", ...(withBranch ? ["BRANCH"] : []), "COMMAND"].map((h) => ({ text: h, colour: "bold" as const }));
    const body = entries.map((e) => [
      e.shortId,
      e.row.kind,
      e.row.kind === "session" && spooled.has(e.row.id) ? `${e.row.status} (spooled)` : e.row.status,
      e.row.reason ?? "-",
      formatDuration(e.ageSeconds),
      e.durationSeconds === null ? "-" : formatDuration(e.durationSeconds),
      e.row.leg_count === null ? "-" : String(e.row.leg_count),
      ...(withBranch ? [e.shortBranch ?? "-"] : []),
      e.argv ? shellWords(e.argv) : "-",
    ]);
    const fitted = width === null ? body : cutReasons(body, width);
    writeOut(
      table(
        [header, ...fitted.map((cells, i) => cells.map((text, c) => (c === STATUS_COLUMN ? { text, colour: statusColour(entries[i]!.row.kind, entries[i]!.row.status) } : text)))],
        { colour, ...(width !== null ? { maxWidth: width } : {}) },
      ),
    );
    return 0;
  },
});
