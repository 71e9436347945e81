// /metrics (li ui) and li watch --metrics-file: Prometheus text that a real parser reads, whose counts
// are the ledger's own.
import { afterAll, describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import type { Subprocess } from "bun";
import parsePrometheusTextFormat from "parse-prometheus-text-format";
import { li, LI_BINARY, liEnv } from "../helpers/cli.ts";
import { tempDir } from "../helpers/temp-dirs.ts";
import { until } from "../helpers/until.ts";
import { ledgerRows } from "../helpers/ledger-rows.ts";

const spawned: Subprocess[] = [];
afterAll(() => {
  for (const p of spawned) if (p.exitCode === null) p.kill("SIGTERM");
});

interface Family {
  name: string;
  type: string;
  help: string;
  metrics: { value?: string; labels?: Record<string, string>; buckets?: Record<string, string>; count?: string; sum?: string }[];
}

const parse = (text: string) => new Map((parsePrometheusTextFormat(text) as Family[]).map((f) => [f.name, f]));

async function fill(home: string): Promise<void> {
  for (const cmd of [["true"], ["true"], ["sh", "-c", "exit 3"], ["sh", "-c", "sleep 0.2"]]) await li(["agent", "--", ...cmd], { home });
  // Two scheduled runs wait in queue q (no watcher takes them), one in a paused queue p.
  for (const q of ["q", "q", "p"]) expect((await li(["agent", "--queue", q, "--detach", "--", "true"], { home })).code).toBe(0);
  expect((await li(["queue", "pause", "p"], { home })).code).toBe(0);
}

async function expectLedgerCounts(home: string, families: Map<string, Family>): Promise<void> {
  const rows = ledgerRows(home);
  const sessions = await rows.all<{ status: string; reason: string | null; n: number }>("SELECT status, status_reason_code AS reason, COUNT(*) AS n FROM sessions GROUP BY status, status_reason_code");
  const runs = families.get("li_runs")!;
  expect(runs.type).toBe("GAUGE");
  const got = runs.metrics.filter((m) => m.labels!.kind === "session").map((m) => ({ status: m.labels!.status!, reason: m.labels!.reason || null, n: Number(m.value) }));
  const want = sessions.map((s) => ({ ...s, n: Number(s.n) }));
  const key = (x: { status: string; reason: string | null }) => `${x.status}/${x.reason}`;
  expect(got.sort((a, b) => key(a).localeCompare(key(b)))).toEqual(want.sort((a, b) => key(a).localeCompare(key(b))));
  const queued = Number((await rows.get<{ n: number }>("SELECT COUNT(*) AS n FROM schedule_runs WHERE status = 'queued'"))!.n);
  expect(runs.metrics.filter((m) => m.labels!.kind === "schedule_run" && m.labels!.status === "queued").reduce((n, m) => n + Number(m.value), 0)).toBe(queued);
  const ended = Number((await rows.get<{ n: number }>("SELECT COUNT(*) AS n FROM legs WHERE ended_at IS NOT NULL"))!.n);
  const hist = families.get("li_leg_duration_seconds")!;
  expect(hist.type).toBe("HISTOGRAM");
  expect(Number(hist.metrics[0]!.count)).toBe(ended);
  expect(Number(hist.metrics[0]!.buckets!["1"])).toBe(ended - 0 - Number((await rows.get<{ n: number }>("SELECT COUNT(*) AS n FROM legs WHERE ended_at - started_at > 1"))!.n));
  const queue = (name: string, state: string) => Number(families.get("li_queue_runs")!.metrics.find((m) => m.labels!.queue === name && m.labels!.state === state)?.value);
  expect([queue("q", "queued"), queue("q", "running"), queue("p", "queued")]).toEqual([2, 0, 1]);
  expect(families.get("li_queue_paused")!.metrics.map((m) => [m.labels!.queue, m.value])).toEqual([["p", "1"], ["q", "0"]]);
  expect(Number(families.get("li_deliveries_dead")!.metrics[0]!.value)).toBe(Number((await rows.get<{ n: number }>("SELECT COUNT(*) AS n FROM terminal_deliveries WHERE state = 'dead'"))!.n));
  expect(families.get("li_phantoms_reaped_total")!.type).toBe("COUNTER");
  expect(Number(families.get("li_spool_entries_waiting")!.metrics[0]!.value)).toBe(0);
  // Every name is li_ and no label is an id.
  for (const [name, f] of families) {
    expect(name.startsWith("li_")).toBe(true);
    for (const m of f.metrics) for (const k of Object.keys(m.labels ?? {})) expect(["kind", "status", "reason", "queue", "state", "host"]).toContain(k);
  }
}

/** li ui on `home`, its URL once it listens. */
async function startUi(home: string): Promise<{ url: string; proc: Subprocess<"ignore", "pipe", "pipe"> }> {
  const proc = Bun.spawn([LI_BINARY, "ui", "--listen", "127.0.0.1:0"], { env: liEnv(home), stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  spawned.push(proc);
  const reader = proc.stdout.getReader();
  let out = "";
  const url = await until("li ui prints where it listens", async () => {
    const { value, done } = await reader.read();
    if (done) throw new Error("li ui exited");
    out += new TextDecoder().decode(value);
    return /li ui: (http:\S+)/.exec(out)?.[1] ?? null;
  });
  return { url, proc };
}

/** What `li events owed --consumer NAME` lists, summed over every live consumer of the ledger. */
async function owedByLiEvents(home: string): Promise<number> {
  const names = await ledgerRows(home).all<{ name: string }>("SELECT name FROM consumers WHERE retired_at IS NULL ORDER BY name");
  let total = 0;
  for (const { name } of names) {
    const r = await li(["events", "owed", "--consumer", name, "--json"], { home });
    expect(r.code).toBe(0);
    total += (JSON.parse(r.stdout) as unknown[]).length;
  }
  return total;
}

describe("metrics", () => {
  test("li_deliveries_owed counts every owed delivery, started or not, as li events owed lists them", async () => {
    const home = path.join(tempDir("li-metrics-"), "home");
    // A plain consumer (acknowledges by hand), a standing handler of another host (no watcher there:
    // never started), and a leg's own handler here that fails (started: its push leaves it to retry).
    expect((await li(["events", "consumers", "add", "ci"], { home })).code).toBe(0);
    expect((await li(["events", "handlers", "add", "elsewhere", "--kind", "session", "--", "/bin/true"], { home, env: { LI_HOST_ID: "host-far" } })).code).toBe(0);
    for (let i = 0; i < 3; i++) expect((await li(["agent", "--", "true"], { home })).code).toBe(0);
    expect((await li(["agent", "--notify", "/bin/false", "--", "true"], { home })).code).toBe(0);
    // ci acknowledges one event: no longer owed to it.
    const owedToCi = JSON.parse((await li(["events", "owed", "--consumer", "ci", "--json"], { home })).stdout) as { event_id: string }[];
    expect(owedToCi).toHaveLength(4);
    expect((await li(["events", "ack", "--consumer", "ci", owedToCi[0]!.event_id], { home })).code).toBe(0);
    const want = await owedByLiEvents(home);
    // ci: 3 left; the far host's handler: 4 sessions' events; the failed leg handler: 1.
    expect(want).toBe(3 + 4 + 1);
    const rows = ledgerRows(home);
    const started = Number((await rows.get<{ n: number }>("SELECT COUNT(*) AS n FROM terminal_deliveries WHERE state IN ('claimed', 'retry')"))!.n);
    expect(started).toBeLessThan(want);
    const { url, proc } = await startUi(home);
    const families = parse(await (await fetch(`${url}metrics`)).text());
    expect(families.get("li_deliveries_owed")!.type).toBe("GAUGE");
    expect(Number(families.get("li_deliveries_owed")!.metrics[0]!.value)).toBe(want);
    const fleet = (await (await fetch(`${url}api/fleet`)).json()) as { deliveries_owed: number };
    expect(fleet.deliveries_owed).toBe(want);
    proc.kill("SIGTERM");
    await proc.exited;
  });

  test("li ui's /metrics parses as Prometheus text and its counts are the ledger's", async () => {
    const home = path.join(tempDir("li-metrics-"), "home");
    await fill(home);
    const proc = Bun.spawn([LI_BINARY, "ui", "--listen", "127.0.0.1:0"], { env: liEnv(home), stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    spawned.push(proc);
    const reader = proc.stdout.getReader();
    let out = "";
    const url = await until("li ui prints where it listens", async () => {
      const { value, done } = await reader.read();
      if (done) throw new Error("li ui exited");
      out += new TextDecoder().decode(value);
      return /li ui: (http:\S+)/.exec(out)?.[1] ?? null;
    });
    const r = await fetch(`${url}metrics`);
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toContain("text/plain; version=0.0.4");
    await expectLedgerCounts(home, parse(await r.text()));
    proc.kill("SIGTERM");
    await proc.exited;
  });

  test("li watch --metrics-file writes the same text atomically; a missing directory is refused with exit 2", async () => {
    const home = path.join(tempDir("li-metrics-"), "home");
    await fill(home);
    const dir = tempDir("li-metrics-out-");
    const file = path.join(dir, "li.prom");
    // --once: the file is written and the watcher exits; nothing else is left in the directory (no temp file).
    const once = await li(["watch", "--once", "--metrics-file", file], { home });
    expect(once.code).toBe(0);
    expect(fs.readdirSync(dir)).toEqual(["li.prom"]);
    // The queued runs were leased and run by the --once pass: the counts are whatever the ledger says now.
    await expectLedgerCountsLoose(home, parse(fs.readFileSync(file, "utf8")));
    const bad = await li(["watch", "--once", "--metrics-file", path.join(dir, "missing", "li.prom")], { home });
    expect(bad.code).toBe(2);
    expect(bad.stderr.trim().split("\n")).toHaveLength(1);
    expect(bad.stderr).toContain("--metrics-file");
  });
});

/** After a watcher's pass the runs moved on: the families are there and the session counts still match. */
async function expectLedgerCountsLoose(home: string, families: Map<string, Family>): Promise<void> {
  const total = Number((await ledgerRows(home).get<{ n: number }>("SELECT COUNT(*) AS n FROM sessions"))!.n);
  expect(families.get("li_runs")!.metrics.filter((m) => m.labels!.kind === "session").reduce((n, m) => n + Number(m.value), 0)).toBe(total);
  for (const name of ["li_leg_duration_seconds", "li_queue_runs", "li_deliveries_owed", "li_deliveries_dead", "li_phantoms_reaped_total", "li_spool_entries_waiting", "li_watcher_last_seen_timestamp_seconds"]) expect(families.has(name) || name === "li_watcher_last_seen_timestamp_seconds").toBe(true);
}
