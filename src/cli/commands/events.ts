// `li events …`: consumers, acknowledgements, standing handlers and one delivery pass (§9.5, §9.6).
import { defineCommand, type ArgsDef } from "citty";
import type { TransitionRow } from "../../ledger/backend.ts";
import type { Ledger } from "../../ledger/ledger.ts";
import type { CallbackRow } from "../../ledger/notify-store.ts";
import { previewWord } from "../../notify/argv.ts";
import { ackEvents, addConsumer, addHandler, listDead, listHandlers, listOwed, removeHandler, retireConsumer } from "../../notify/consumers.ts";
import { deliverOnce } from "../../notify/deliver.ts";
import { handlerHost } from "../../notify/engine.ts";
import { describeArgv } from "../../notify/run.ts";
import { UsageError } from "../../util/errors.ts";
import { cliContext, cliLedger, cliPaths } from "../context.ts";
import { table, writeJson } from "../output.ts";
import { isoTime } from "../render.ts";
import { writeErr, writeOut, writeNote } from "../io.ts";
import { repeatedFlag } from "../repeated-flag.ts";

const USAGE = `Terminal events, their consumers and handlers.
  li events --consumer NAME [--json]          events owed to NAME (unacknowledged, oldest first)
  li events --dead [--json]                   deliveries that failed every attempt
  li events ack --consumer NAME EVENT_ID…     acknowledge events (idempotent)
  li events consumers add|retire NAME         register a consumer / retire it, releasing what it was owed
  li events handlers add NAME [--kind K…] [--id ID…] -- ARGV…
  li events handlers rm NAME | ls [--json]    standing handlers (run only on the host that added them)
  li events deliver [--json]                  deliver what this host's handlers are owed, once`;

const ARGS = {
  words: { type: "positional", description: "ack | consumers add|retire NAME | handlers add|rm|ls | deliver", required: false },
  consumer: { type: "string", description: "the consumer to list or acknowledge for" },
  dead: { type: "boolean", description: "list dead deliveries" },
  json: { type: "boolean", description: "print JSON" },
  kind: { type: "string", description: "handlers add: an execution kind to fire on (repeatable)" },
  id: { type: "string", description: "handlers add: an entity id to fire on (repeatable)" },
} as const satisfies ArgsDef;

type Flag = Exclude<keyof typeof ARGS, "words">;
const FLAGS = Object.keys(ARGS).filter((name): name is Flag => name !== "words");

function present(rawArgs: readonly string[]): Set<Flag> {
  const seen = new Set<Flag>();
  for (const token of rawArgs) {
    const name = token.replace(/^--(no-)?/, "").split("=", 1)[0] as Flag;
    if (token.startsWith("--") && FLAGS.includes(name)) seen.add(name);
  }
  return seen;
}

function only(seen: Set<Flag>, allowed: readonly Flag[], where: string): void {
  for (const flag of seen) if (!allowed.includes(flag)) throw new UsageError(`flag --${flag} does not apply to 'li events${where ? " " + where : ""}'`);
}

function arity(words: readonly string[], n: number, usage: string): void {
  if (words.length !== n) throw new UsageError(`usage: li events ${usage}`);
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

function handlerJson(row: CallbackRow) {
  return {
    name: row.name,
    consumer: row.consumer,
    argv: JSON.parse(row.argv) as string[],
    kinds: row.filter_kinds === null ? null : (JSON.parse(row.filter_kinds) as string[]),
    ids: row.filter_ids === null ? null : (JSON.parse(row.filter_ids) as string[]),
    host_id: row.host_id,
    this_host: row.host_id === handlerHost(),
    created_at: row.created_at,
  };
}

/** The parsed command line every subcommand reads. */
interface EventsCall {
  args: { consumer?: string | undefined; dead?: boolean | undefined; json?: boolean | undefined };
  rawArgs: readonly string[];
  words: string[];
  seen: Set<Flag>;
}

/** Opens the ledger for one subcommand and always closes it. */
async function withLedger(create: boolean, use: (ledger: Ledger) => Promise<number>): Promise<number> {
  const ledger = cliLedger({ create });
  try {
    return await use(ledger);
  } finally {
    ledger.close();
  }
}

/** `li events --consumer NAME | --dead`. */
function listEvents({ args, seen }: EventsCall): Promise<number> {
  only(seen, ["consumer", "dead", "json"], "");
  if (seen.has("consumer") === Boolean(args.dead)) throw new UsageError("li events needs --consumer NAME or --dead (or a subcommand; see li events --help)");
  return withLedger(false, async (ledger) => {
    if (args.dead) {
      const rows = await listDead(ledger);
      if (args.json) writeJson(rows.map((r) => ({ event_id: r.transition_id, consumer: r.consumer, entity: { kind: r.entity_type, id: r.entity_id }, terminal_status: r.status, attempts: r.attempts, last_error: r.last_error, updated_at: r.updated_at })));
      else writeOut(table([["EVENT", "CONSUMER", "ENTITY", "STATUS", "ATTEMPTS", "LAST ERROR"], ...rows.map((r) => [r.transition_id, r.consumer, `${r.entity_type} ${r.entity_id}`, r.status, String(r.attempts), r.last_error ?? "-"])]));
      return 0;
    }
    const rows = await listOwed(ledger, args.consumer!);
    if (args.json) writeJson(rows.map(eventJson));
    else writeOut(table([["EVENT", "TIME", "ENTITY", "FROM", "TO", "REASON"], ...rows.map((r) => [r.id, isoTime(r.created_at), `${r.entity_type} ${r.entity_id}`, r.previous_status ?? "-", r.status, r.reason_code])]));
    return 0;
  });
}

/** `li events ack --consumer NAME EVENT_ID…`. */
function ack({ args, words, seen }: EventsCall): Promise<number> {
  only(seen, ["consumer", "json"], "ack");
  const consumer = args.consumer;
  if (!consumer) throw new UsageError("li events ack needs --consumer NAME");
  const ids = words.slice(1);
  return withLedger(false, async (ledger) => {
    const result = await ackEvents(ledger, consumer, ids);
    if (args.json) writeJson({ consumer, ...result });
    else writeNote(`acknowledged ${result.acked} event(s) for ${consumer}${result.already ? ` (${result.already} already acknowledged)` : ""}`);
    return 0;
  });
}

/** `li events consumers add|retire NAME`. */
function consumers({ args, words, seen }: EventsCall): Promise<number> {
  only(seen, ["json"], "consumers");
  const [, sub, name] = words;
  if ((sub !== "add" && sub !== "retire") || name === undefined) throw new UsageError("usage: li events consumers add|retire NAME");
  arity(words, 3, "consumers add|retire NAME");
  return withLedger(sub === "add", async (ledger) => {
    if (sub === "add") {
      const added = await addConsumer(ledger, name);
      if (args.json) writeJson(added);
      else writeNote(added.created ? `consumer ${name} registered at seq ${added.watermark}` : `consumer ${name} is already registered (seq ${added.watermark})`);
    } else {
      const retired = await retireConsumer(ledger, name);
      if (args.json) writeJson(retired);
      else writeNote(`consumer ${name} retired; ${retired.released} owed event(s) released`);
    }
    return 0;
  });
}

/** `li events handlers add NAME [--kind K…] [--id ID…] -- ARGV…`. */
function addStandingHandler({ args, rawArgs, words, seen }: EventsCall): Promise<number> {
  only(seen, ["kind", "id", "json"], "handlers add");
  arity(words, 3, "handlers add NAME [--kind K…] [--id ID…] -- ARGV…");
  const argv = cliContext.passthrough ?? [];
  if (argv.length === 0) throw new UsageError("li events handlers add needs the handler's command after --");
  return withLedger(true, async (ledger) => {
    const row = await addHandler(ledger, { name: words[2]!, kinds: repeatedFlag(rawArgs, "kind"), ids: repeatedFlag(rawArgs, "id"), argv, hostId: handlerHost() });
    if (args.json) writeJson(handlerJson(row));
    else writeNote(`handler ${row.name} added on this host: ${describeArgv(JSON.parse(row.argv) as string[])}`);
    return 0;
  });
}

/** `li events handlers rm NAME`. */
function removeStandingHandler({ args, words, seen }: EventsCall): Promise<number> {
  only(seen, ["json"], "handlers rm");
  arity(words, 3, "handlers rm NAME");
  const name = words[2]!;
  return withLedger(false, async (ledger) => {
    const removed = await removeHandler(ledger, name);
    if (args.json) writeJson({ name, ...removed });
    else writeNote(`handler ${name} removed; ${removed.released} owed event(s) released`);
    return 0;
  });
}

/** `li events handlers ls`. */
function listStandingHandlers({ args, words, seen }: EventsCall): Promise<number> {
  only(seen, ["json"], "handlers ls");
  arity(words, 2, "handlers ls");
  return withLedger(false, async (ledger) => {
    const rows = await listHandlers(ledger);
    if (args.json) {
      writeJson(rows.map(handlerJson));
      return 0;
    }
    const here = handlerHost();
    const list = (text: string | null) => (text === null ? "*" : (JSON.parse(text) as string[]).map((v) => previewWord(v)).join(","));
    writeOut(
      table([
        ["NAME", "KINDS", "IDS", "HOST", "COMMAND"],
        ...rows.map((r) => [r.name ?? "-", list(r.filter_kinds), list(r.filter_ids), r.host_id === here ? "this host" : previewWord(r.host_id), describeArgv(JSON.parse(r.argv) as string[])]),
      ]),
    );
    return 0;
  });
}

/** `li events deliver`: one delivery pass. */
function deliver({ args, words, seen }: EventsCall): Promise<number> {
  only(seen, ["json"], "deliver");
  arity(words, 1, "deliver");
  return withLedger(false, async (ledger) => {
    const { outcomes, ...counts } = await deliverOnce(ledger, { liHome: cliPaths().home });
    if (args.json) {
      writeJson({ ...counts, outcomes: outcomes.map((o) => ({ event_id: o.transitionId, consumer: o.consumer, state: o.state, error: o.result.ok ? null : o.result.error })) });
      return 0;
    }
    for (const o of outcomes) if (!o.result.ok) writeNote(`handler ${o.consumer} on event ${o.transitionId}: ${o.result.error} (${o.state})`);
    writeOut(`delivered ${counts.delivered}, failed ${counts.failed}, dead ${counts.dead}, skipped (claimed elsewhere) ${counts.skipped_claimed}\n`);
    return 0;
  });
}

const HANDLER_VERBS: ReadonlyMap<string, (call: EventsCall) => Promise<number>> = new Map([
  ["add", addStandingHandler],
  ["rm", removeStandingHandler],
  ["ls", listStandingHandlers],
]);

export default defineCommand({
  meta: { name: "events", description: USAGE },
  args: ARGS,
  async run({ args, rawArgs }) {
    const words = (args._ ?? []).map(String);
    const [verb, sub] = words;
    if (cliContext.passthrough !== null && !(verb === "handlers" && sub === "add")) {
      throw new UsageError(`'li events${verb ? " " + [verb, sub].filter(Boolean).join(" ") : ""}' takes no command after -- (only 'li events handlers add' does)`);
    }
    const call: EventsCall = { args, rawArgs, words, seen: present(rawArgs) };
    if (verb === undefined) return listEvents(call);
    if (verb === "ack") return ack(call);
    if (verb === "consumers") return consumers(call);
    if (verb === "deliver") return deliver(call);
    if (verb === "handlers") {
      const run = sub === undefined ? undefined : HANDLER_VERBS.get(sub);
      if (!run) throw new UsageError("usage: li events handlers add|rm|ls");
      return run(call);
    }
    throw new UsageError(`unknown command 'events ${verb}' (see li events --help)`);
  },
});
