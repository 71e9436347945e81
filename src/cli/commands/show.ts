// `li show ID`: one entity with its legs, history, verification, evidence, callbacks and deliveries (§13).
import { command } from "../command.ts";
import { resolveOneIn, VIEW_LOOKUP_ORDER } from "../../ledger/resolve.ts";
import { parseJsonColumn, table, writeJson } from "../output.ts";
import { adminEventJson, describeEntity, entityJson, isoTime, transitionJson } from "../render.ts";
import { writeOut } from "../io.ts";
import { safeText } from "../text.ts";
import { UsageError } from "../../util/errors.ts";
import type { CallbackRow } from "../../ledger/notify-store.ts";

/** Registration columns holding JSON text. */
const CALLBACK_JSON = new Set(["argv", "filter_kinds", "filter_ids"]);

function callbackJson(row: CallbackRow): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(row)) out[k] = CALLBACK_JSON.has(k) ? parseJsonColumn(v) : k === "enabled" ? v === 1 : v;
  return out;
}

function argvText(value: unknown): string {
  const argv = parseJsonColumn(value);
  return Array.isArray(argv) ? argv.map(String).join(" ") : String(value ?? "-");
}

export default command({
  description: "Show one entity (or the session of a branch or run id): its legs, history, verification, evidence, callbacks and deliveries",
  examples: ["li show 1a2b3c4d", "li show 1a2b3c4d --json"],
  // Read-only and on the fast path: the raw read queries, without drizzle or zod.
  ledger: "reads",
  args: {
    id: { type: "positional", valueHint: "ID", description: "an entity, branch or run id (or a unique prefix)", required: true },
    json: { type: "boolean", description: "print JSON" },
  },
  async run({ args, ledger: open }) {
    const extra = args._.map(String).slice(1);
    if (extra.length > 0) throw new UsageError(`li show takes one id; unexpected '${extra[0]}'`);
    const ledger = open();
    const { reads } = ledger;
    const target = await resolveOneIn(reads, args.id, VIEW_LOOKUP_ORDER);
    const isSession = target.kind === "session";
    const [row, transitions, adminEvents, legs, callbacks, deliveries] = await Promise.all([
      reads.entityRow(target.kind, target.id),
      reads.transitionsOf(target.kind, target.id),
      reads.adminEventsOf(target.kind, target.id),
      isSession ? reads.legsOf(target.id) : [],
      isSession ? reads.listCallbacks(target.id) : [],
      reads.listDeliveries(target.kind, target.id),
    ]);
    if (!row) throw new Error(`${target.kind} ${target.id} vanished while reading`);
    const entity = entityJson(row);
    const currentLeg = legs.find((l) => l.id === row.current_leg_id) ?? null;
    if (args.json) {
      writeJson({
        kind: target.kind,
        ...(target.via ? { resolved_from: target.via } : {}),
        entity,
        run_dir: currentLeg?.state_root ?? null,
        artifact_dir: currentLeg?.artifact_root ?? (typeof row.artifacts_path === "string" ? row.artifacts_path : null),
        artifact_contract: entity.artifact_contract_json ?? null,
        artifact_verification: entity.artifact_verification_json ?? null,
        evidence: entity.status_evidence_refs ?? null,
        legs: legs.map((l) => entityJson(l as unknown as Record<string, unknown>)),
        transitions: transitions.map(transitionJson),
        admin_events: adminEvents.map(adminEventJson),
        callbacks: callbacks.map(callbackJson),
        deliveries,
      });
      return 0;
    }
      const out = [`${target.kind} ${safeText(row.id)}${target.via ? ` (from ${target.via.kind} ${safeText(target.via.id)})` : ""}`, ...describeEntity(row).map((l) => `  ${l}`)];
      if (currentLeg) out.push(`  run_dir: ${safeText(currentLeg.state_root)}`);
    writeOut(out.join("\n") + "\n");
    if (legs.length > 0) {
      writeOut("\nlegs:\n");
      writeOut(
        table(legs.map((l) => ["  " + String(l.seq), l.run_id, isoTime(l.started_at), l.ended_at === null ? "running" : isoTime(l.ended_at), l.status, l.reason_code ?? "-", `exit=${l.exit_code ?? "-"}`, argvText(l.command)])),
      );
    }
    writeOut("\nhistory:\n");
    writeOut(
      table(transitions.map((r) => ["  " + isoTime(r.created_at), `${r.previous_status ?? "-"} → ${r.status}`, r.reason_code, r.source + (r.actor ? `:${r.actor}` : "")])),
    );
    if (callbacks.length > 0) {
      writeOut("\ncallbacks:\n");
      writeOut(table(callbacks.map((c) => ["  " + c.consumer, c.scope, c.enabled === 1 ? "enabled" : "disabled", argvText(c.argv)])));
    }
    if (deliveries.length > 0) {
      writeOut("\ndeliveries:\n");
      writeOut(table(deliveries.map((d) => ["  " + d.consumer, d.state, `attempts=${d.attempts}`, d.transition_id, d.last_error ?? ""])));
    }
    return 0;
  },
});
