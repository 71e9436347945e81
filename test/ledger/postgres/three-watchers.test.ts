// Several hosts, one PostgreSQL ledger, one watcher per host (SPEC §14 "Many hosts", §9.5, issue 11 item 6):
// three `li watch` processes with different host identities (LI_HOST_ID) deliver 1,000 owed events to
// standing handlers, each handler bound to one host. Every handler run records its start and end: no
// delivery runs twice at the same time, each runs only under a watcher of its own host, and none is lost
// (counted) — also when one watcher is killed with -9 halfway, holding claims on handlers in flight: its
// claims expire and the watcher that replaces it takes them over.

import { expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { addHandler } from "../../../src/notify/consumers.ts";
import { LI_BINARY, liEnv } from "../../helpers/cli.ts";
import { usePgTestLedgers, type PgTestLedger } from "../../helpers/pg-ledger.ts";
import { describePostgres, usePostgresDatabase } from "../../helpers/postgres.ts";
import { NeverHappens, until } from "../../helpers/until.ts";
import { INTERVAL } from "../../notify/helpers.ts";

const EVENTS = 1000;
/** Each host's handler is owed the terminal events of one kind, so the 1,000 events split across the three. */
const HOSTS = [
  { id: "host-a", kind: "session" },
  { id: "host-b", kind: "invocation" },
  { id: "host-c", kind: "schedule_run" },
] as const;
type Host = (typeof HOSTS)[number];

interface Run {
  event: string;
  consumer: string;
  pid: string;
  parent: number;
  /** LI_HOST_ID of the watcher that ran it (handlers inherit the watcher's environment). */
  host: string;
  start: number;
  end: number | null;
}

/** The handler runs recorded in `file`, one per (event, handler pid), with their start and end. */
function runsIn(file: string): Run[] {
  if (!existsSync(file)) return [];
  const runs = new Map<string, Run>();
  for (const line of readFileSync(file, "utf8").split("\n")) {
    const [event, consumer, pid, parent, host, what, at] = line.split(" ");
    if (!event || !consumer || !pid || !parent || !host || !at) continue;
    const key = `${event} ${pid}`;
    const run = runs.get(key) ?? { event, consumer, pid, parent: Number(parent), host, start: NaN, end: null };
    if (what === "start") run.start = Number(at);
    else run.end = Number(at);
    runs.set(key, run);
  }
  return [...runs.values()];
}

describePostgres("three watchers with different host identities on one PostgreSQL ledger", () => {
  const { open, spawned } = usePgTestLedgers(usePostgresDatabase());
  let t: PgTestLedger | undefined;

  test("deliver 1,000 owed events: none run twice at once, each on its own host, none lost — also with one watcher killed -9 halfway", async () => {
    t = await open();
    const ledger = t.ledger;
    const out = join(t.home, "runs.log");
    for (const host of HOSTS) {
      await addHandler(ledger, { name: `rec-${host.id}`, argv: [INTERVAL, out, `handler:rec-${host.id}`], kinds: [host.kind], ids: [], hostId: host.id });
    }
    const eventsOf = new Map<string, Set<string>>(HOSTS.map((h) => [`handler:rec-${h.id}`, new Set<string>()]));
    for (let i = 0; i < EVENTS; i++) {
      const host = HOSTS[i % HOSTS.length]!;
      const id = `${host.kind}-${i}`;
      await ledger.createEntity(host.kind, { id });
      const outcome =
        host.kind === "schedule_run"
          ? await ledger.transition(host.kind, id, { newStatus: "cancelled", reasonCode: "run.cancelled.operator" })
          : await ledger.transition(host.kind, id, { newStatus: "completed", reasonCode: "run.completed.ok" });
      if (outcome.result !== "applied" || !outcome.transition.terminalEvent) throw new Error(`event ${id} did not apply`);
      eventsOf.get(`handler:rec-${host.id}`)!.add(outcome.transition.transitionId);
    }

    const startWatcher = (host: Host) => {
      const home = join(t!.home, host.id);
      const proc = Bun.spawn([LI_BINARY, "watch", "--sweep-interval", "1h"], {
        env: liEnv(home, { ...t!.env, LI_HOST_ID: host.id, LI_HOST_NAME: host.id }),
        stdin: "ignore",
        stdout: "pipe",
        stderr: "pipe",
      });
      spawned.push(proc);
      return proc;
    };
    const alive = (proc: Subprocess<"ignore", "pipe", "pipe">) => async () => {
      if (proc.exitCode === null) return true;
      throw new NeverHappens(`a watcher exited ${proc.exitCode}: ${await new Response(proc.stderr).text()}`);
    };
    const procs = HOSTS.map(startWatcher);
    const [, victim] = procs as [Subprocess<"ignore", "pipe", "pipe">, Subprocess<"ignore", "pipe", "pipe">, Subprocess<"ignore", "pipe", "pipe">];
    const victimConsumer = `handler:rec-${HOSTS[1].id}`;

    // Halfway through host-b's share, with at least one of its handlers started and not ended: kill -9.
    const victimRuns = () => runsIn(out).filter((r) => r.consumer === victimConsumer && r.parent === victim.pid);
    await until(
      "host-b's watcher halfway, with a handler in flight",
      async () => {
        for (const p of procs) await alive(p)();
        const runs = victimRuns();
        return new Set(runs.map((r) => r.event)).size >= eventsOf.get(victimConsumer)!.size / 2 && runs.some((r) => r.end === null);
      },
      { timeoutMs: 120_000, intervalMs: 2 },
    );
    victim.kill("SIGKILL");
    await victim.exited;
    const beforeRestart = new Set(victimRuns().map((r) => r.event)).size;
    expect(beforeRestart).toBeLessThan(eventsOf.get(victimConsumer)!.size);
    // Its replacement on the same host takes the lock (the dead one's session is gone) and, once the dead
    // watcher's claims expire, the deliveries it held.
    const replacement = startWatcher(HOSTS[1]);
    const acked = async () => {
      const [row] = await t!.raw.sql`SELECT count(*)::int AS n FROM terminal_deliveries WHERE state = 'acked'`;
      return row.n as number;
    };
    await until("every delivery acknowledged", async () => {
      for (const p of [procs[0]!, procs[2]!, replacement]) await alive(p)();
      return (await acked()) === EVENTS;
    }, { timeoutMs: 150_000, intervalMs: 50 });
    for (const p of [procs[0]!, procs[2]!, replacement]) p.kill("SIGTERM");
    expect(await Promise.all([procs[0]!, procs[2]!, replacement].map((p) => p.exited))).toEqual([0, 0, 0]);

    const runs = runsIn(out);
    // None lost: every (event, handler) owed ran to its end at least once, and its row is acknowledged.
    for (const [consumer, events] of eventsOf) {
      const ranToEnd = new Set(runs.filter((r) => r.consumer === consumer && r.end !== null).map((r) => r.event));
      expect({ consumer, missing: [...events].filter((e) => !ranToEnd.has(e)), extra: [...ranToEnd].filter((e) => !events.has(e)) }).toEqual({ consumer, missing: [], extra: [] });
    }
    const rows = await t.raw.sql`SELECT consumer, state, count(*)::int AS n, max(attempts)::int AS attempts FROM terminal_deliveries GROUP BY consumer, state ORDER BY consumer`;
    expect(rows.map((r: { consumer: string; state: string; n: number }) => `${r.consumer} ${r.state} ${r.n}`)).toEqual(
      HOSTS.map((h) => `handler:rec-${h.id} acked ${eventsOf.get(`handler:rec-${h.id}`)!.size}`),
    );
    // The dead watcher's in-flight claims were taken over: a second attempt, after the first expired.
    expect(rows.find((r: { consumer: string }) => r.consumer === victimConsumer).attempts).toBeGreaterThanOrEqual(2);
    // Each handler ran only under a watcher of its own host (the LI_HOST_ID it inherited from that watcher).
    for (const run of runs) expect({ consumer: run.consumer, host: run.host }).toEqual({ consumer: run.consumer, host: run.consumer.slice("handler:rec-".length) });
    // No two runs of one delivery overlapped (a run killed with its watcher never ended: it counts until the end of time).
    const byDelivery = Map.groupBy(runs, (r) => `${r.event} ${r.consumer}`);
    const overlapping: string[] = [];
    for (const [delivery, list] of byDelivery) {
      const sorted = list.sort((a, b) => a.start - b.start);
      for (let i = 1; i < sorted.length; i++) {
        const previousEnd = sorted[i - 1]!.end ?? Number.POSITIVE_INFINITY;
        if (sorted[i]!.start < previousEnd) overlapping.push(`${delivery}: ${JSON.stringify(sorted)}`);
      }
    }
    expect(overlapping).toEqual([]);
    expect(runs.length).toBeGreaterThanOrEqual(EVENTS);
  }, 300_000);
});
