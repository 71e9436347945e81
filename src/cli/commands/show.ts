// `li show ID`: one entity with its history (and, for sessions, what later issues attach).
import { defineCommand } from "citty";
import { ENTITY_KINDS } from "../../lifecycle/policy.ts";
import { resolveOne } from "../../ledger/resolve.ts";
import { cliLedger } from "../context.ts";
import { table, writeJson } from "../output.ts";
import { adminEventJson, describeEntity, entityJson, isoTime, transitionJson } from "../render.ts";

export default defineCommand({
  meta: { name: "show", description: "Show one entity: its row and its history" },
  args: {
    id: { type: "positional", description: "an entity id (or a unique prefix)", required: true },
    json: { type: "boolean", description: "print JSON" },
  },
  async run({ args }) {
    const ledger = cliLedger({ create: false });
    try {
      const target = await resolveOne(ledger.backend, args.id, ENTITY_KINDS);
      const [row, transitions, adminEvents] = await Promise.all([
        ledger.backend.getEntity(target.kind, target.id),
        ledger.backend.listTransitions(target.kind, target.id),
        ledger.backend.listAdminEvents(target.kind, target.id),
      ]);
      if (!row) throw new Error(`${target.kind} ${target.id} vanished while reading`);
      if (args.json) {
        writeJson({ kind: target.kind, entity: entityJson(row), transitions: transitions.map(transitionJson), admin_events: adminEvents.map(adminEventJson) });
        return 0;
      }
      const out = [`${target.kind} ${row.id}`, ...describeEntity(row).map((l) => `  ${l}`), "", "history:"];
      process.stdout.write(out.join("\n") + "\n");
      process.stdout.write(
        table(transitions.map((r) => ["  " + isoTime(r.created_at), `${r.previous_status ?? "-"} → ${r.status}`, r.reason_code, r.source + (r.actor ? `:${r.actor}` : "")])),
      );
      return 0;
    } finally {
      ledger.close();
    }
  },
});
