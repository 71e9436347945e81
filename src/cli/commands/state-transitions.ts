// `li state transitions ID`: the append-only history of one entity.
import { command, LEDGER_RETRY_ARG } from "../command.ts";
import { ENTITY_KINDS } from "../../lifecycle/policy.ts";
import { resolveOne } from "../../ledger/resolve.ts";
import { table, writeJson } from "../output.ts";
import { isoTime, transitionJson } from "../render.ts";
import { writeOut } from "../io.ts";

export default command({
  description: "Print the status history of one entity, oldest first",
  examples: ["li state transitions 1a2b3c4d", "li state transitions 1a2b3c4d --json"],
  ledger: "existing",
  args: {
    id: { type: "positional", valueHint: "ID", complete: "ids", description: "an entity id (or a unique prefix)", required: true },
    json: { type: "boolean", description: "print JSON" },
    ...LEDGER_RETRY_ARG,
  },
  async run({ args, ledger: open }) {
    const ledger = open();
    const target = await resolveOne(ledger.backend, args.id, ENTITY_KINDS);
    const rows = await ledger.backend.listTransitions(target.kind, target.id);
    if (args.json) writeJson({ kind: target.kind, id: target.id, transitions: rows.map(transitionJson) });
    else
      writeOut(
        table([
          ["TIME", "FROM", "TO", "REASON", "SOURCE", "ACTOR"],
          ...rows.map((r) => [isoTime(r.created_at), r.previous_status ?? "-", r.status, r.reason_code, r.source, r.actor ?? "-"]),
        ]),
      );
    return 0;
  },
});
