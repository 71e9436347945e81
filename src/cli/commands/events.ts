// `li events …`: consumers, acknowledgements, standing handlers and one delivery pass (§9.5, §9.6).
// One command per export; src/cli/tree.ts places them under `li events`.
import type { TransitionRow, CallbackRow } from "../../ledger/rows.ts";
import type { Ledger } from "../../ledger/ledger.ts";
import { previewWord } from "../../notify/argv.ts";
import { ackEvents, addConsumer, addHandler, assertPlainConsumer, checkHandlerInput, listDead, listHandlers, listOwed, removeHandler, retireConsumer } from "../../notify/consumers.ts";
import { deliverOnce } from "../../notify/deliver.ts";
import { handlerHost, handlerUid } from "../../notify/host.ts";
import { describeArgv } from "../../notify/run.ts";
import { UsageError } from "../../util/errors.ts";
import { command, LEDGER_RETRY_ARG } from "../command.ts";
import { cliPaths } from "../paths.ts";
import { table, writeJson } from "../output.ts";
import { isoTime } from "../render.ts";
import { writeErr, writeOut, writeNote } from "../io.ts";
import { repeatedFlag } from "../repeated-flag.ts";

const json = { type: "boolean", description: "print JSON" } as const;
const consumerFlag = { type: "string", valueHint: "NAME", description: "the consumer (li events consumers add NAME)" } as const;

/** The positional words after the command's own: exactly the declared ones, else a usage line. */
function words(rest: readonly (string | number)[], n: number, usage: string): string[] {
  if (rest.length !== n) throw new UsageError(`usage: ${usage}${rest.length > n ? ` (unexpected '${String(rest[n])}')` : ""}`);
  return rest.map(String);
}

function eventJson(row: TransitionRow) {
  return {
    event_id: row.id,
    seq: row.seq,
    entity: { kind: row.entity_type, id: row.entity_id },
    previous_status: row.previous_status,
    terminal_status: row.status,
    reason_code: row.reason_code,
    occurred_at: row.created_at,
  };
}

/** `you`, `uid 1001`, or `unknown` (registered before li recorded owners: run by nobody, §18). */
function ownerOf(uid: number | null): string {
  return uid === null ? "unknown" : uid === handlerUid() ? "you" : `uid ${uid}`;
}

function handlerJson(row: CallbackRow) {
  return {
    name: row.name,
    consumer: row.consumer,
    // Another user's command (it may hold a token) is theirs to see on a shared ledger (§18).
    argv: row.uid === handlerUid() ? (JSON.parse(row.argv) as string[]) : null,
    kinds: row.filter_kinds === null ? null : (JSON.parse(row.filter_kinds) as string[]),
    ids: row.filter_ids === null ? null : (JSON.parse(row.filter_ids) as string[]),
    host_id: row.host_id,
    this_host: row.host_id === handlerHost(),
    uid: row.uid,
    yours: row.uid === handlerUid(),
    created_at: row.created_at,
  };
}

async function printOwed(ledger: Ledger, consumer: string, asJson: boolean): Promise<number> {
  const rows = await listOwed(ledger, consumer);
  if (asJson) writeJson(rows.map(eventJson));
  else writeOut(table([["EVENT", "TIME", "ENTITY", "FROM", "TO", "REASON"], ...rows.map((r) => [r.id, isoTime(r.created_at), `${r.entity_type} ${r.entity_id}`, r.previous_status ?? "-", r.status, r.reason_code])]));
  return 0;
}

async function printDead(ledger: Ledger, asJson: boolean): Promise<number> {
  const rows = await listDead(ledger);
  if (asJson) writeJson(rows.map((r) => ({ event_id: r.transition_id, consumer: r.consumer, entity: { kind: r.entity_type, id: r.entity_id }, terminal_status: r.status, attempts: r.attempts, last_error: r.last_error, updated_at: r.updated_at })));
  else writeOut(table([["EVENT", "CONSUMER", "ENTITY", "STATUS", "ATTEMPTS", "LAST ERROR"], ...rows.map((r) => [r.transition_id, r.consumer, `${r.entity_type} ${r.entity_id}`, r.status, String(r.attempts), r.last_error ?? "-"])]));
  return 0;
}

/** `li events owed --consumer NAME`. */
export const owed = command({
  description: "List the terminal events owed to a consumer: unacknowledged, oldest first",
  examples: ["li events owed --consumer=ci", "li events owed --consumer=ci --json"],
  ledger: "existing",
  args: { consumer: { ...consumerFlag, required: true }, json, ...LEDGER_RETRY_ARG },
  run({ args, ledger }) {
    words(args._, 0, "li events owed --consumer=NAME [--json]");
    return printOwed(ledger(), args.consumer, Boolean(args.json));
  },
});

/** `li events dead`. */
export const dead = command({
  description: "List the deliveries that failed every attempt (they are never retried silently)",
  examples: ["li events dead", "li events dead --json"],
  ledger: "existing",
  args: { json, ...LEDGER_RETRY_ARG },
  run({ args, ledger }) {
    words(args._, 0, "li events dead [--json]");
    return printDead(ledger(), Boolean(args.json));
  },
});

/** `li events --consumer NAME | --dead`: the spelling SPEC §9.6 promises, the same as `owed` / `dead`. */
export const list = command({
  description: "the same as li events owed --consumer=NAME, or li events dead with --dead",
  examples: ["li events --consumer=ci --json", "li events --dead"],
  ledger: "existing",
  args: { consumer: consumerFlag, dead: { type: "boolean", description: "list dead deliveries (li events dead)" }, json, ...LEDGER_RETRY_ARG },
  run({ args, ledger }) {
    words(args._, 0, "li events --consumer=NAME | --dead [--json]");
    if ((args.consumer !== undefined) === Boolean(args.dead)) throw new UsageError("li events needs --consumer=NAME or --dead (or a subcommand; see li events --help)");
    return args.dead ? printDead(ledger(), Boolean(args.json)) : printOwed(ledger(), args.consumer!, Boolean(args.json));
  },
});

/** `li events ack --consumer NAME EVENT_ID…`. */
export const ack = command({
  description: "Acknowledge events for a consumer; acknowledging twice is not an error",
  examples: ["li events ack --consumer=ci EVENT_ID", "li events ack --consumer=ci --json EVENT_ID EVENT_ID"],
  ledger: "existing",
  args: { ids: { type: "positional", valueHint: "EVENT_ID…", description: "the events to acknowledge", required: false }, consumer: { ...consumerFlag, required: true }, json, ...LEDGER_RETRY_ARG },
  async run({ args, ledger }) {
    const ids = args._.map(String);
    if (ids.length === 0) throw new UsageError("li events ack needs at least one EVENT_ID");
    const result = await ackEvents(ledger(), args.consumer, ids);
    if (args.json) writeJson({ consumer: args.consumer, ...result });
    else writeNote(`acknowledged ${result.acked} event(s) for ${args.consumer}${result.already ? ` (${result.already} already acknowledged)` : ""}`);
    return 0;
  },
});

const consumerName = { type: "positional", valueHint: "NAME", description: "the consumer's name", required: true } as const;

/** `li events consumers add NAME`. */
export const consumersAdd = command({
  description: "Register a consumer: it is owed every terminal event committed from now on, until it acknowledges each",
  examples: ["li events consumers add ci", "li events consumers add ci --json"],
  ledger: "create",
  args: { name: consumerName, json, ...LEDGER_RETRY_ARG },
  async run({ args, ledger }) {
    const [name] = words(args._, 1, "li events consumers add NAME [--json]");
    assertPlainConsumer(name!); // before opening: a refused name must not create the ledger
    const added = await addConsumer(ledger(), name!);
    if (args.json) writeJson(added);
    else writeNote(added.created ? `consumer ${name} registered at seq ${added.watermark}` : `consumer ${name} is already registered (seq ${added.watermark})`);
    return 0;
  },
});

/** `li events consumers retire NAME`. */
export const consumersRetire = command({
  description: "Retire a consumer, releasing the events it was still owed",
  examples: ["li events consumers retire ci", "li events consumers retire ci --json"],
  ledger: "existing",
  args: { name: consumerName, json, ...LEDGER_RETRY_ARG },
  async run({ args, ledger }) {
    const [name] = words(args._, 1, "li events consumers retire NAME [--json]");
    const retired = await retireConsumer(ledger(), name!);
    if (args.json) writeJson(retired);
    else writeNote(`consumer ${name} retired; ${retired.released} owed event(s) released`);
    return 0;
  },
});

const handlerName = { type: "positional", valueHint: "NAME", description: "the handler's name", required: true } as const;

/** `li events handlers add NAME [--kind K…] [--id ID…] -- ARGV…`. */
export const handlersAdd = command({
  description: "Add a standing handler: ARGV runs on every matching terminal event, on this host only (the host that added it)",
  examples: ["li events handlers add notify-ci --kind=session -- ./notify-ci {entity_id} {status}", "li events handlers add page --id=SESSION_ID -- /usr/local/bin/page {status}"],
  ledger: "create",
  takesCommand: true,
  args: {
    name: handlerName,
    kind: { type: "string", valueHint: "KIND", complete: "kinds", description: "fire only on this execution kind (repeatable)" },
    id: { type: "string", valueHint: "ID", description: "fire only on this entity id (repeatable)" },
    json,
    ...LEDGER_RETRY_ARG,
  },
  async run({ args, rawArgs, passthrough, ledger }) {
    const [name] = words(args._, 1, "li events handlers add NAME [--kind=KIND…] [--id=ID…] -- ARGV…");
    if (!passthrough || passthrough.length === 0) throw new UsageError("li events handlers add needs the handler's command after --");
    const input = { name: name!, kinds: repeatedFlag(rawArgs, "kind"), ids: repeatedFlag(rawArgs, "id"), argv: passthrough };
    checkHandlerInput(input); // before opening: a refused handler must not create the ledger
    const row = await addHandler(ledger(), { ...input, hostId: handlerHost() });
    if (args.json) writeJson(handlerJson(row));
    else writeNote(`handler ${row.name} added on this host: ${describeArgv(JSON.parse(row.argv) as string[])}`);
    return 0;
  },
});

/** `li events handlers rm NAME`. */
export const handlersRm = command({
  description: "Remove a standing handler, releasing the events it was still owed",
  examples: ["li events handlers rm notify-ci", "li events handlers rm notify-ci --json"],
  ledger: "existing",
  args: { name: handlerName, json, ...LEDGER_RETRY_ARG },
  async run({ args, ledger }) {
    const [name] = words(args._, 1, "li events handlers rm NAME [--json]");
    const removed = await removeHandler(ledger(), name!);
    if (args.json) writeJson({ name, ...removed });
    else writeNote(`handler ${name} removed; ${removed.released} owed event(s) released`);
    return 0;
  },
});

/** `li events handlers ls`. */
export const handlersLs = command({
  description: "List the standing handlers; argument values are previewed, never printed in full",
  examples: ["li events handlers ls", "li events handlers ls --json"],
  ledger: "existing",
  args: { json, ...LEDGER_RETRY_ARG },
  async run({ args, ledger }) {
    words(args._, 0, "li events handlers ls [--json]");
    const rows = await listHandlers(ledger());
    if (args.json) {
      writeJson(rows.map(handlerJson));
      return 0;
    }
    const here = handlerHost();
    const list = (text: string | null) => (text === null ? "*" : (JSON.parse(text) as string[]).map((v) => previewWord(v)).join(","));
    writeOut(
      table([
        ["NAME", "KINDS", "IDS", "HOST", "OWNER", "COMMAND"],
        ...rows.map((r) => [r.name ?? "-", list(r.filter_kinds), list(r.filter_ids), r.host_id === here ? "this host" : previewWord(r.host_id), ownerOf(r.uid), r.uid === handlerUid() ? describeArgv(JSON.parse(r.argv) as string[]) : "(not shown: another user's)"]),
      ]),
    );
    return 0;
  },
});

/** `li events deliver`: one delivery pass. */
export const deliver = command({
  description: "Deliver what this host's handlers are owed, once (what li watch does on every change)",
  examples: ["li events deliver", "li events deliver --json"],
  ledger: "existing",
  args: { json, ...LEDGER_RETRY_ARG },
  async run({ args, ledger }) {
    words(args._, 0, "li events deliver [--json]");
    const { outcomes, ...counts } = await deliverOnce(ledger(), { liHome: cliPaths().home });
    if (args.json) {
      writeJson({ ...counts, outcomes: outcomes.map((o) => ({ event_id: o.transitionId, consumer: o.consumer, state: o.state, error: o.result.ok ? null : o.result.error })) });
      return 0;
    }
    for (const o of outcomes) if (!o.result.ok) writeNote(`handler ${o.consumer} on event ${o.transitionId}: ${o.result.error} (${o.state})`);
    writeOut(`delivered ${counts.delivered}, failed ${counts.failed}, dead ${counts.dead}, skipped (claimed elsewhere) ${counts.skipped_claimed}\n`);
    return 0;
  },
});
