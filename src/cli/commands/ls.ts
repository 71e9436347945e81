// `li ls`: recent entities, newest first, with the current leg's age and duration (§13).
import { standing } from "../../schedule/view.ts";
import { command, LEDGER_RETRY_ARG } from "../command.ts";
import { canonicalKind, ENTITY_KINDS, POLICIES, type EntityKind } from "../../lifecycle/policy.ts";
import { formatDuration, parseDuration, parsePositiveNumber } from "../../util/duration.ts";
import { listEntries, lsJson } from "../views/ls.ts";
import { UsageError } from "../../util/errors.ts";
import { statusColour, useColour } from "../colour.ts";
import { terminalWidth } from "../terminal.ts";
import { cut, displayWidth, table, writeJson } from "../output.ts";
import { safeText } from "../../util/text.ts";
import { writeOut } from "../io.ts";
import { shellWords } from "../render.ts";

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
    const { entries, spooled } = await listEntries(ledger, {
      kinds,
      limit,
      ...(args.status !== undefined ? { status: args.status } : {}),
      ...(sinceSeconds !== undefined ? { sinceSeconds } : {}),
    });
    if (args.json) {
      writeJson(lsJson(entries, spooled));
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
