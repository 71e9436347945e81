// `li state create KIND`: a row for an external orchestrator, with its first history row.
import { command, LEDGER_RETRY_ARG } from "../command.ts";
import { canonicalKind, ENTITY_KINDS, type EntityKind } from "../../lifecycle/policy.ts";
import { UsageError } from "../../util/errors.ts";
import { assertSafeId } from "../../util/ids.ts";
import { entityJson } from "../render.ts";
import { writeJson } from "../output.ts";
import { writeOut } from "../io.ts";

/** Every kind but session: a session is only ever created by the leg that runs it (`li agent`). */
const CREATABLE: readonly EntityKind[] = ENTITY_KINDS.filter((k) => k !== "session");

export default command({
  description: "Create an invocation, play, schedule_run, show or team; prints its id",
  examples: ["li state create play", "li state create schedule_run --invocation=INVOCATION_ID --json"],
  ledger: "create",
  args: {
    kind: { type: "positional", valueHint: "KIND", complete: "kinds", description: `one of ${CREATABLE.join(", ")}`, required: true },
    id: { type: "string", valueHint: "ID", description: "use this id instead of a random UUID" },
    status: { type: "string", valueHint: "STATUS", complete: "statuses", description: "initial status (default: the kind's first initial status)" },
    reason: { type: "string", valueHint: "CODE", description: "initial reason code (default: the kind's creation code)" },
    summary: { type: "string", valueHint: "TEXT", description: "a one-line reason summary" },
    session: { type: "string", valueHint: "SESSION_ID", description: "the play's session id" },
    invocation: { type: "string", valueHint: "INVOCATION_ID", description: "the schedule run's invocation id" },
    json: { type: "boolean", description: "print the new row as JSON" },
    ...LEDGER_RETRY_ARG,
  },
  async run({ args, ledger: open }) {
    const kind = canonicalKind(args.kind);
    if (!kind || !CREATABLE.includes(kind)) throw new UsageError(`cannot create '${args.kind}': KIND is one of ${CREATABLE.join(", ")}`);
    const fields: Record<string, unknown> = {};
    if (args.session !== undefined) {
      if (kind !== "play") throw new UsageError(`--session applies to a play, not a ${kind}`);
      fields.session_id = assertSafeId(args.session, "--session");
    }
    if (args.invocation !== undefined) {
      if (kind !== "schedule_run") throw new UsageError(`--invocation applies to a schedule_run, not a ${kind}`);
      fields.invocation_id = assertSafeId(args.invocation, "--invocation");
    }
    const ledger = open();
    const row = await ledger.createEntity(kind, {
      ...(args.id !== undefined ? { id: args.id } : {}),
      ...(args.status !== undefined ? { status: args.status } : {}),
      ...(args.reason !== undefined ? { reasonCode: args.reason } : {}),
      ...(args.summary !== undefined ? { reasonSummary: args.summary } : {}),
      source: "admin",
      actor: process.env.USER ?? null,
      fields,
    });
    if (args.json) writeJson({ kind, ...entityJson(row) });
    else writeOut(`${row.id}\n`);
    return 0;
  },
});
