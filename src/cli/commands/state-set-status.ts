// `li state set-status`: the audited repair path through the guarded write (§5, §13).
import { command, LEDGER_RETRY_ARG } from "../command.ts";
import { canonicalKind, ENTITY_KINDS } from "../../lifecycle/policy.ts";
import { UsageError } from "../../util/errors.ts";
import { resolveOne } from "../../ledger/resolve.ts";
import { pushTerminal } from "../../notify/push.ts";
import { cliPaths } from "../paths.ts";
import { writeJson } from "../output.ts";
import { writeErr, writeNote } from "../io.ts";

export default command({
  description: "Move an entity to a status through the guarded write. Exit 0 applied, 1 not applied, 2 invalid or not found",
  examples: ["li state set-status play 1a2b3c4d --status=running --reason=play.running.started", "li state set-status session ID --status=failed --reason=run.failed.exception --override --actor=ops --why=\"crashed before teardown\""],
  ledger: "existing",
  args: {
    kind: { type: "positional", valueHint: "KIND", complete: "kinds", description: `one of ${ENTITY_KINDS.join(", ")}`, required: true },
    id: { type: "positional", valueHint: "ID", description: "the entity id (or a unique prefix)", required: true },
    status: { type: "string", valueHint: "STATUS", complete: "statuses", description: "the new status", required: true },
    reason: { type: "string", valueHint: "CODE", description: "a registered reason code (li reasons)", required: true },
    summary: { type: "string", valueHint: "TEXT", description: "a one-line reason summary" },
    expect: { type: "string", valueHint: "STATUS,…", description: "apply only if the current status is one of these (comma-separated; 'null' for none)" },
    override: { type: "boolean", description: "allow leaving a terminal status or an undeclared edge (needs --actor and --why)" },
    actor: { type: "string", valueHint: "WHO", description: "who is making this change" },
    why: { type: "string", valueHint: "TEXT", description: "the justification recorded with an override" },
    json: { type: "boolean", description: "print the outcome as JSON" },
    ...LEDGER_RETRY_ARG,
  },
  async run({ args, ledger: open }) {
    const kind = canonicalKind(args.kind);
    if (!kind) throw new UsageError(`unknown kind '${args.kind}'`);
    if (args.override && (!args.actor?.trim() || !args.why?.trim())) throw new UsageError("--override needs --actor and --why");
    if (!args.override && args.why !== undefined) throw new UsageError("--why is only meaningful with --override");
    const expected = args.expect === undefined ? undefined : args.expect.split(",").map((s) => s.trim()).filter(Boolean).map((s) => (s === "null" ? null : s));
    if (expected !== undefined && expected.length === 0) throw new UsageError("--expect needs at least one status");
    const ledger = open();
    const target = await resolveOne(ledger.backend, args.id, [kind]);
    const outcome = await ledger.transition(kind, target.id, {
      newStatus: args.status,
      reasonCode: args.reason,
      ...(args.summary !== undefined ? { reasonSummary: args.summary } : {}),
      source: "admin",
      actor: args.actor ?? process.env.USER ?? null,
      ...(expected ? { expectedStatuses: expected } : {}),
      ...(args.override ? { override: true, overrideActor: args.actor!, overrideJustification: args.why! } : {}),
    });
    if (outcome.result === "applied") {
      if (args.json) writeJson({ applied: true, kind, id: target.id, previous_status: outcome.transition.previousStatus, status: outcome.transition.status, event_id: outcome.transition.transitionId });
        else writeNote(`${kind} ${target.id}: ${outcome.transition.previousStatus} → ${outcome.transition.status}`);
      // The repair path pushes like any process that applies a terminal event (§9.4); handlers never change the outcome.
      const pushed = await pushTerminal(ledger, outcome.transition, { liHome: cliPaths().home });
        for (const o of pushed.outcomes) if (!o.result.ok) writeNote(`handler ${o.consumer}: ${o.result.error} (${o.state})`);
        if (pushed.error) writeNote(`${pushed.error}; li events deliver will retry`);
      return 0;
    }
    const current = outcome.result === "conflict" ? outcome.current.status : null;
    if (args.json) writeJson({ applied: false, kind, id: target.id, conflict: outcome.result === "conflict" ? outcome.why : null, status: current });
      writeNote(`not applied: ${kind} ${target.id} is '${current}' (guard: --expect ${args.expect ?? ""})`);
    return 1;
  },
});
