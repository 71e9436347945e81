// The ledger's counts in Prometheus' text exposition format (version 0.0.4): what `li ui` serves at
// /metrics and `li watch --metrics-file` writes for node_exporter's textfile collector. Names start with
// li_, values are in base units (seconds), counters end in _total, and no label holds an id.
import type { LedgerReads } from "../ledger/reads.ts";
import { DURATION_BUCKETS } from "../ledger/rules/metrics.ts";
import { spooledSessions } from "../spool/waiting.ts";

type Labels = Record<string, string>;

/** A label value as the format wants it: backslash, double quote and newline escaped. */
function labelValue(v: string): string {
  return v.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

function sample(name: string, labels: Labels, value: number): string {
  const keys = Object.keys(labels);
  const set = keys.length === 0 ? "" : `{${keys.map((k) => `${k}="${labelValue(labels[k]!)}"`).join(",")}}`;
  return `${name}${set} ${Number.isFinite(value) ? String(value) : value > 0 ? "+Inf" : "NaN"}`;
}

class Exposition {
  private readonly lines: string[] = [];
  family(name: string, type: "counter" | "gauge" | "histogram", help: string, samples: [Labels, number][], suffix = ""): void {
    this.lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
    for (const [labels, value] of samples) this.lines.push(sample(name + suffix, labels, value));
  }
  raw(line: string): void {
    this.lines.push(line);
  }
  text(): string {
    return this.lines.join("\n") + "\n";
  }
}

export interface MetricsSource {
  reads: LedgerReads;
  /** $LI_HOME, whose spool this host's waiting outcomes are in. */
  home: string;
}

export async function metricsText(source: MetricsSource): Promise<string> {
  const { reads } = source;
  const [statuses, durations, deliveries, owed, phantoms, queues, counts, hosts, spooled] = await Promise.all([
    reads.metrics.statusCounts(),
    reads.metrics.legDurations(),
    reads.metrics.deliveryStates(),
    reads.metrics.deliveriesOwed(),
    reads.metrics.phantomsReaped(),
    reads.schedule.listQueues(),
    reads.schedule.queueCounts(),
    reads.schedule.listHosts(),
    spooledSessions(source.home),
  ]);
  const out = new Exposition();
  out.family(
    "li_runs",
    "gauge",
    "Sessions and scheduled runs in the ledger, by kind, status and reason code (the reason is empty while none is recorded).",
    statuses.map((s) => [{ kind: s.kind, status: s.status, reason: s.reason ?? "" }, s.n]),
  );
  out.raw("# HELP li_leg_duration_seconds How long each ended leg ran, from its start to its end.");
  out.raw("# TYPE li_leg_duration_seconds histogram");
  DURATION_BUCKETS.forEach((le, i) => out.raw(sample("li_leg_duration_seconds_bucket", { le: String(le) }, durations.buckets[i]!)));
  out.raw(sample("li_leg_duration_seconds_bucket", { le: "+Inf" }, durations.count));
  out.raw(sample("li_leg_duration_seconds_sum", {}, durations.sum));
  out.raw(sample("li_leg_duration_seconds_count", {}, durations.count));
  // A queue with nothing in it still shows its zeros, so an alert on it has a series to read.
  const byQueue = new Map(counts.map((c) => [c.queue, c]));
  const queueNames = [...new Set([...queues.map((q) => q.name), ...counts.map((c) => c.queue)])].sort();
  out.family(
    "li_queue_runs",
    "gauge",
    "Scheduled runs per queue that are running, queued (ready to lease) or waiting (for a dependency or a retry).",
    queueNames.flatMap((queue) => (["running", "queued", "waiting"] as const).map((state): [Labels, number] => [{ queue, state }, byQueue.get(queue)?.[state] ?? 0])),
  );
  out.family("li_queue_paused", "gauge", "1 when the queue is paused, else 0.", queues.map((q) => [{ queue: q.name }, q.paused ? 1 : 0]));
  const state = new Map(deliveries.map((d) => [d.state, d.n]));
  out.family(
    "li_deliveries_owed",
    "gauge",
    "Terminal events still owed to a handler or consumer, on every host: not yet delivered or acknowledged, whether no watcher has taken them yet, one is running them or they wait to retry (the sum of li events owed over the live consumers).",
    [[{}, owed]],
  );
  out.family("li_deliveries_dead", "gauge", "Deliveries that used up their attempts (li events dead lists them).", [[{}, state.get("dead") ?? 0]]);
  out.family("li_deliveries", "gauge", "Delivery rows by state.", [...state.entries()].sort().map(([s, n]) => [{ state: s }, n]));
  out.family("li_phantoms_reaped_total", "counter", "Sessions the reaper found with a dead supervisor and recorded as such, over the ledger's kept history.", [[{}, phantoms]]);
  out.family("li_spool_entries_waiting", "gauge", "Leg outcomes waiting in this host's spool for the ledger (li watch records them).", [[{}, [...spooled.values()].reduce((n, files) => n + files.length, 0)]]);
  out.family(
    "li_watcher_last_seen_timestamp_seconds",
    "gauge",
    "When each host's watcher last took part in dispatching scheduled runs (Unix time).",
    hosts.map((h) => [{ host: h.host_name ?? h.host_id }, h.seen_at]),
  );
  return out.text();
}
