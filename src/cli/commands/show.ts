// `li show ID`: one entity for people — a summary first, then legs, history, verification, evidence and
// notices; the raw row under --raw; everything, exactly, under --json (§13, docs/json.md).
import { command, LEDGER_RETRY_ARG } from "../command.ts";
import type { RunView } from "../../schedule/view.ts";
import type { EntityRow, LegRow } from "../../ledger/rows.ts";
import { artifactDirOf, othersHandler, readShown, renderJson, type Shown } from "../views/show.ts";
import { formatDuration } from "../../util/duration.ts";
import { UsageError } from "../../util/errors.ts";
import { paint, statusColour, useColour } from "../colour.ts";
import { parseJsonColumn, table, writeJson } from "../output.ts";
import { argvOf, describeEntity, entityJson, isoTime, shellWords } from "../render.ts";
import { writeOut } from "../io.ts";
import { safeText } from "../../util/text.ts";

function argvText(value: unknown): string {
  const argv = argvOf(value);
  return argv ? shellWords(argv) : String(value ?? "-");
}

/** A leg's host as people read it: the recorded host name, else its id. */
function hostText(leg: LegRow): string {
  if (!leg.host_id && !leg.host_name) return "-";
  return leg.host_name ? `${leg.host_name} (${leg.host_id ?? "no host id"})` : (leg.host_id ?? "-");
}

/** CPU seconds and peak resident memory of a leg, as the kernel counted them (§8.7). */
function resourceText(leg: LegRow): string {
  const cpu = leg.cpu_user_seconds != null ? `cpu ${leg.cpu_user_seconds.toFixed(2)}s user, ${(leg.cpu_system_seconds ?? 0).toFixed(2)}s system` : "cpu -";
  const peak = leg.peak_rss_bytes != null ? `peak memory ${(Number(leg.peak_rss_bytes) / (1024 * 1024)).toFixed(1)} MiB` : "peak memory -";
  return `${cpu}; ${peak}`;
}

/** The escalation file of the leg whose outcome used it (evidence or metadata holding escalations), if any. */
function escalationFile(s: Shown): string | null {
  const used = s.transitions.filter((t) => {
    const evidence = parseJsonColumn(t.evidence_refs);
    const metadata = parseJsonColumn(t.metadata) as { escalations?: unknown } | null;
    return (Array.isArray(evidence) && evidence.some((e) => (e as { kind?: unknown })?.kind === "escalation")) || (metadata !== null && typeof metadata === "object" && Array.isArray(metadata.escalations));
  });
  if (used.length === 0) return null;
  const legId = used.at(-1)!.leg_id;
  const leg = s.legs.find((l) => l.id === legId) ?? s.currentLeg;
  return leg ? `${leg.state_root}/escalations.jsonl` : null;
}

/** The summary block: what a person looks for first (§13). Labels are li's; every value is escaped. */
function summaryLines(s: Shown, colour: boolean): string[] {
  const { target, row, currentLeg: leg } = s;
  const lines: string[] = [`${target.kind} ${safeText(row.id)}${target.via ? ` (from ${target.via.kind} ${safeText(target.via.id)})` : ""}`];
  const field = (label: string, value: string) => lines.push(`  ${`${label}:`.padEnd(11)} ${value}`);
  const reason = typeof row.status_reason_code === "string" ? ` (${safeText(row.status_reason_code)})` : "";
  field("status", paint(safeText(row.status), statusColour(target.kind, row.status), colour) + reason);
  if (typeof row.status_reason_summary === "string" && row.status_reason_summary !== "") field("summary", safeText(row.status_reason_summary));
  for (const file of s.spooled) field("spooled", `an outcome waits in this host's spool: ${safeText(file)} (li watch records it)`);
  if (s.schedule) for (const [label, value] of scheduleFields(s.row.status as string, s.schedule, s.now)) field(label, value);
  for (const b of s.branches) field("resume", `li agent -r ${safeText(b.id)} -- …${b.name ? `  (branch ${safeText(b.name)})` : ""}`);
  if (leg) {
    field("host", safeText(hostText(leg)));
    field("command", safeText(argvText(leg.command)));
    if (leg.cwd) field("cwd", safeText(leg.cwd));
  }
  const started = leg?.started_at ?? (typeof row.started_at === "number" ? row.started_at : null);
  const ended = leg ? leg.ended_at : typeof row.ended_at === "number" ? row.ended_at : null;
  if (started !== null) {
    const ofLeg = leg && s.legs.length > 1 ? ` (leg ${leg.seq} of ${s.legs.length}; the session started ${isoTime(row.started_at)})` : "";
    field("started", `${isoTime(started)}${ofLeg}`);
    field("ended", ended === null ? "-" : isoTime(ended));
    field("duration", `${formatDuration((ended ?? s.now) - started)}${ended === null ? " so far" : ""}`);
  }
  if ("exit_code" in row) field("exit code", row.exit_code === null || row.exit_code === undefined ? "-" : safeText(row.exit_code));
  if (leg) field("run dir", safeText(leg.state_root));
  if (leg?.containment) field("contained", safeText(leg.containment === "cgroup" && leg.cgroup_path ? `cgroup ${leg.cgroup_path}` : leg.containment));
  if (leg && (leg.cpu_user_seconds != null || leg.peak_rss_bytes != null)) field("resources", resourceText(leg));
  const artifacts = artifactDirOf(s);
  if (artifacts !== null) field("artifacts", safeText(artifacts));
  else if (leg?.artifact_root === "") field("artifacts", "- (its run directory could not be written)");
  const escalations = escalationFile(s);
  if (escalations !== null) field("escalation", safeText(escalations));
  return lines;
}

/** A scheduled run's summary lines (§19): where it stands, what it waits for, its lease and its chain. */
function scheduleFields(status: string, v: RunView, now: number): [string, string][] {
  const out: [string, string][] = [];
  out.push(["queue", `${safeText(v.queue ?? "-")}${v.position !== null ? ` (#${v.position + 1} of the queued; ${v.position} ahead)` : ""}`]);
  if (v.needs.length > 0) out.push(["needs", safeText(v.needs.join(", "))]);
  for (const d of v.waits_for) out.push(["waits for", `${d.kind} ${safeText(d.id)} (${safeText(d.status ?? "gone")})`]);
  if (v.command) out.push(["command", safeText(shellWords(v.command))]);
  out.push(["attempt", `${v.attempt}${v.chain_parent_id ? ` (a retry of ${safeText(v.chain_parent_id)})` : ""}${v.retried_as ? `; retried as ${safeText(v.retried_as)}` : ""}`]);
  if (status === "retry_wait" && v.retry_at !== null && !v.retried_as) out.push(["retry", `due ${isoTime(v.retry_at)} (in ${formatDuration(Math.max(0, v.retry_at - now))})`]);
  if (status === "running") out.push(["lease", `${safeText(v.leased_by ?? "-")} until ${v.lease_expires_at === null ? "-" : isoTime(v.lease_expires_at)} (lease ${v.lease_attempts_used})`]);
  if (v.session_id) out.push(["session", `${safeText(v.session_id)} (li show ${safeText(v.session_id.slice(0, 8))}: its legs)`]);
  return out;
}

function verificationLines(value: unknown): string[] {
  if (value === null || typeof value !== "object") return [];
  const v = value as { status?: unknown; artifacts?: unknown };
  const rows = Array.isArray(v.artifacts)
    ? (v.artifacts as Record<string, unknown>[]).map((a) => ["  " + safeText(a.id), safeText(a.path), a.required === false ? "optional" : "required", a.produced ? "produced" : "missing"])
    : [];
  return [`\nverification: ${safeText(v.status)}`, ...(rows.length > 0 ? [table(rows).trimEnd()] : [])];
}

function render(s: Shown, raw: boolean): string {
  const colour = useColour();
  const entity = entityJson(s.row);
  const out: string[] = summaryLines(s, colour);
  if (s.legs.length > 0) {
    out.push("\nlegs:");
    out.push(
      table(
        s.legs.map((l) => [
          "  " + String(l.seq),
          l.run_id,
          isoTime(l.started_at),
          l.ended_at === null ? "running" : isoTime(l.ended_at),
          { text: l.status, colour: statusColour("session", l.status) },
          l.reason_code ?? "-",
          `exit=${l.exit_code ?? "-"}`,
          hostText(l),
          argvText(l.command),
        ]),
        { colour },
      ).trimEnd(),
    );
  }
  out.push("\nhistory:");
  out.push(table(s.transitions.map((r) => ["  " + isoTime(r.created_at), `${r.previous_status ?? "-"} → ${r.status}`, r.reason_code, r.source + (r.actor ? `:${r.actor}` : ""), r.reason_summary ?? ""])).trimEnd());
  out.push(...verificationLines(entity.artifact_verification_json));
  const evidence = entity.status_evidence_refs;
  if (Array.isArray(evidence) && evidence.length > 0) {
    out.push("\nevidence:");
    // One line per entry; JSON keeps its structure readable and safeText keeps it one line.
    for (const e of evidence) out.push(`  ${safeText(JSON.stringify(e))}`);
  }
  if (s.adminEvents.length > 0) {
    out.push("\naudit:");
    out.push(table(s.adminEvents.map((a) => ["  " + isoTime(a.created_at), a.event_type, a.actor ?? "-", a.justification ?? ""])).trimEnd());
  }
  if (s.callbacks.length > 0) {
    out.push("\ncallbacks:");
    out.push(table(s.callbacks.map((c) => ["  " + c.consumer, c.scope, c.enabled === 1 ? "enabled" : "disabled", othersHandler(c) ? `(another user's handler, uid ${c.uid ?? "unknown"}: its command is not shown)` : argvText(c.argv)])).trimEnd());
  }
  if (s.deliveries.length > 0) {
    out.push("\ndeliveries:");
    out.push(table(s.deliveries.map((d) => ["  " + d.consumer, d.state, `attempts=${d.attempts}`, d.transition_id, d.last_error ?? ""])).trimEnd());
  }
  if (raw) {
    out.push("\nraw:");
    out.push(...describeEntity(s.row).map((l) => `  ${l}`));
    for (const l of s.legs) {
      out.push(`  leg ${l.seq}:`);
      out.push(...describeEntity(l as unknown as EntityRow).map((line) => `    ${line}`));
    }
  }
  return out.join("\n") + "\n";
}

export default command({
  description: "Show one entity (or the session of a branch or run id): a summary, then its legs, history, verification, evidence and notices",
  examples: ["li show 1a2b3c4d", "li show 1a2b3c4d --raw"],
  // Read-only and on the fast path: the raw read queries, without drizzle or zod.
  ledger: "reads",
  args: {
    id: { type: "positional", valueHint: "ID", complete: "ids", description: "an entity, branch or run id (or a unique prefix)", required: true },
    json: { type: "boolean", description: "print JSON (everything, exactly; docs/json.md)" },
    raw: { type: "boolean", description: "also print the raw columns (node_metadata, message ids, every leg column)" },
    ...LEDGER_RETRY_ARG,
  },
  async run({ args, ledger: open }) {
    const extra = args._.map(String).slice(1);
    if (extra.length > 0) throw new UsageError(`li show takes one id; unexpected '${extra[0]}'`);
    const shown = await readShown(open(), args.id);
    if (args.json) writeJson(renderJson(shown));
    else writeOut(render(shown, Boolean(args.raw)));
    return 0;
  },
});
