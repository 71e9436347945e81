// `li queue set/ls/pause/resume` (SPEC §19): queues are ledger rows, so every watcher on every host sees a
// change at its next pass. Thin: parse, call src/schedule/queues.ts, render.
import { command } from "../command.ts";
import type { Ledger } from "../../ledger/ledger.ts";
import type { QueueRow } from "../../ledger/rows.ts";
import type { QueuePatch } from "../../ledger/schedule-store.ts";
import { assertQueueName, listQueues, setQueue } from "../../schedule/queues.ts";
import { formatDuration, parseNonNegativeInt } from "../../util/duration.ts";
import { UsageError } from "../../util/errors.ts";
import { table, writeJson } from "../output.ts";
import { writeOut } from "../io.ts";

const json = { type: "boolean", description: "print JSON" } as const;
const name = { type: "positional", valueHint: "NAME", description: "the queue", required: false } as const;

function oneName(rest: readonly (string | number)[], usage: string): string {
  if (rest.length !== 1) throw new UsageError(`usage: ${usage}${rest.length > 1 ? ` (unexpected '${String(rest[1])}')` : ""}`);
  return assertQueueName(String(rest[0]), "queue");
}

function queueJson(row: QueueRow) {
  return { name: row.name, parallel: row.parallel, scope: row.scope, paused: row.paused === 1, lease_attempts: row.lease_attempts, updated_at: row.updated_at };
}

function render(row: QueueRow, asJson: boolean): number {
  if (asJson) writeJson(queueJson(row));
  else writeOut(`${row.name}: parallel ${row.parallel === 0 ? "unlimited" : row.parallel} ${row.scope === "fleet" ? "across the fleet" : "per host"}, lease attempts ${row.lease_attempts}${row.paused ? ", paused" : ""}\n`);
  return 0;
}

async function change(open: () => Ledger, queue: string, patch: QueuePatch, asJson: boolean): Promise<number> {
  return render(await setQueue(open(), queue, patch), asJson);
}

export const set = command({
  description: "Create or change a queue: how many of its runs may run at once, on each host (--per-host, the default) or across every host of the ledger (--fleet)",
  examples: ["li queue set gpu --parallel=2 --fleet", "li queue set build --parallel=4"],
  ledger: "create",
  args: {
    name,
    parallel: { type: "string", valueHint: "N", description: "at most N running at once (0 = unlimited); lowering it never stops running legs" },
    "per-host": { type: "boolean", description: "count the limit on each host (the default)" },
    fleet: { type: "boolean", description: "count the limit across every host sharing the ledger" },
    "lease-attempts": { type: "string", valueHint: "N", description: "how many expired leases a run may have before it fails (default 3)" },
    json,
  },
  run({ args, ledger }) {
    const queue = oneName(args._, "li queue set NAME [--parallel=N] [--per-host|--fleet] [--lease-attempts=N]");
    if (args["per-host"] && args.fleet) throw new UsageError("li queue set: --per-host or --fleet, not both");
    const patch: QueuePatch = {};
    if (args.parallel !== undefined) patch.parallel = parseNonNegativeInt(args.parallel, "--parallel");
    if (args["per-host"]) patch.scope = "host";
    if (args.fleet) patch.scope = "fleet";
    if (args["lease-attempts"] !== undefined) {
      patch.lease_attempts = parseNonNegativeInt(args["lease-attempts"], "--lease-attempts");
      if (patch.lease_attempts < 1) throw new UsageError("--lease-attempts: at least 1");
    }
    return change(ledger, queue, patch, Boolean(args.json));
  },
});

export const pause = command({
  description: "Stop leasing a queue's runs on every host (running legs go on); the pause outlives watcher restarts",
  examples: ["li queue pause gpu"],
  ledger: "create",
  args: { name, json },
  run({ args, ledger }) {
    return change(ledger, oneName(args._, "li queue pause NAME"), { paused: true }, Boolean(args.json));
  },
});

export const resume = command({
  description: "Lease a paused queue's runs again",
  examples: ["li queue resume gpu"],
  ledger: "create",
  args: { name, json },
  run({ args, ledger }) {
    return change(ledger, oneName(args._, "li queue resume NAME"), { paused: false }, Boolean(args.json));
  },
});

export const ls = command({
  description: "Each queue: its limit, how many of its runs are running, queued and waiting, and how long the oldest queued one has waited",
  examples: ["li queue ls", "li queue ls --json"],
  ledger: "existing",
  args: { json },
  async run({ args, ledger }) {
    if (args._.length > 0) throw new UsageError(`li queue ls takes no arguments; unexpected '${String(args._[0])}'`);
    const l = ledger();
    await l.ready();
    const now = l.now();
    const queues = await listQueues(l);
    if (args.json) {
      writeJson(queues.map((q) => ({ ...queueJson(q), running: q.running, queued: q.queued, waiting: q.waiting, oldest_queued_at: q.oldest_queued_at })));
      return 0;
    }
    const rows = queues.map((q) => [
      q.name,
      `${q.parallel === 0 ? "unlimited" : q.parallel}/${q.scope}`,
      q.paused ? "paused" : "open",
      String(q.running),
      String(q.queued),
      String(q.waiting),
      q.oldest_queued_at === null ? "-" : formatDuration(Math.max(0, now - q.oldest_queued_at)),
    ]);
    writeOut(table([["QUEUE", "LIMIT", "STATE", "RUNNING", "QUEUED", "WAITING", "OLDEST WAIT"], ...rows]));
    return 0;
  },
});
