// The notify store on PostgreSQL answers as SQLite's does (SPEC §9): on the same arranged rows — leg
// registrations, standing handlers with and without filters, plain consumers, deliveries in every state,
// two hosts — every owed query, the prune's owed check and the lookups return the same rows.

import { afterAll, beforeAll, expect, test } from "bun:test";
import type { Database } from "bun:sqlite";
import type { PgClient } from "../../../src/ledger/postgres/client.ts";
import { PgNotifyStore } from "../../../src/ledger/postgres/notify.ts";
import * as pgSweeps from "../../../src/ledger/postgres/sweeps.ts";
import { SqliteNotifyStore } from "../../../src/ledger/sqlite/notify.ts";
import * as liteSweeps from "../../../src/ledger/sqlite/sweeps.ts";
import type { OwedQuery } from "../../../src/ledger/notify-store.ts";
import { SESSION_TERMINAL_STATUSES } from "../../../src/lifecycle/policy.ts";
import { describePostgres, usePostgresDatabase } from "../../helpers/postgres.ts";
import { arrange, leg, pgLedgerClient, session, sqliteLedgerDb, transition, type Rows } from "./store-fixtures.ts";

const NOW = 1_800_001_000;
const OLD = 1_700_000_000;

type Value = string | number | null;
const callback = (id: string, consumer: string, extra: Record<string, Value>): Record<string, Value> => ({
  id,
  consumer,
  scope: "standing",
  name: consumer.replace(/^h:/, ""),
  argv: JSON.stringify(["notify", `{event_id}-${id}`]),
  origin: "test",
  host_id: "host-a",
  session_id: null,
  leg_id: null,
  filter_kinds: null,
  filter_ids: null,
  enabled: 1,
  created_at: OLD,
  retired_at: null,
  ...extra,
});
const consumer = (name: string, watermark = 0, retiredAt: number | null = null): Record<string, Value> => ({ name, watermark, registered_at: OLD, retired_at: retiredAt });
const delivery = (transitionId: string, consumerName: string, state: string, extra: Record<string, Value> = {}): Record<string, Value> => ({
  transition_id: transitionId,
  consumer: consumerName,
  state,
  attempts: 1,
  created_at: OLD,
  updated_at: OLD,
  ...extra,
});

const ROWS: Rows = {
  sessions: [
    session("s-1", "completed", OLD, { current_leg_id: "l-1" }),
    // Resumed: its second leg is current; the first leg's notice was the first terminal event.
    session("s-2", "failed", OLD, { current_leg_id: "l-2b" }),
    session("s-3", "completed", OLD, { current_leg_id: "l-3" }),
    session("s-4", "completed", OLD),
  ],
  invocations: [{ id: "i-1", status: "completed", created_at: OLD, updated_at: OLD }],
  legs: [leg("l-1", "s-1", 1), leg("l-2a", "s-2", 1), leg("l-2b", "s-2", 2), leg("l-3", "s-3", 1)],
  branches: [{ id: "b-1", session_id: "s-1", created_at: OLD, updated_at: OLD }],
  status_transitions: [
    transition("t-1", 1, "session", "s-1", { leg_id: "l-1" }),
    transition("t-2", 2, "session", "s-2", { leg_id: "l-2a", status: "failed" }),
    transition("t-3", 3, "invocation", "i-1"),
    transition("t-4", 4, "session", "s-2", { leg_id: "l-2b", status: "failed" }),
    transition("t-5", 5, "session", "s-3", { leg_id: "l-3", terminal_event: 0, status: "running" }),
    transition("t-6", 6, "session", "s-3", { leg_id: "l-3" }),
    transition("t-7", 7, "session", "s-4"),
    transition("t-8", 8, "session", "s-1", { leg_id: "l-1" }),
  ],
  terminal_callbacks: [
    // Leg registrations: owed the first terminal event of their session above the watermark, while their leg is current.
    callback("r-1", "cb:1", { scope: "leg", name: null, session_id: "s-1", leg_id: "l-1" }),
    callback("r-2a", "cb:2a", { scope: "leg", name: null, session_id: "s-2", leg_id: "l-2a" }),
    callback("r-2b", "cb:2b", { scope: "leg", name: null, session_id: "s-2", leg_id: "l-2b" }),
    callback("r-3", "cb:3", { scope: "leg", name: null, session_id: "s-3", leg_id: "l-3", host_id: "host-b" }),
    callback("r-retired", "cb:retired", { scope: "leg", name: null, session_id: "s-4", leg_id: null, retired_at: OLD, enabled: 0 }),
    // Standing handlers: every terminal event their filter matches.
    callback("h-1", "h:all", {}),
    callback("h-2", "h:sessions", { filter_kinds: JSON.stringify(["session"]) }),
    callback("h-3", "h:ids", { filter_ids: JSON.stringify(["s-2", "i-1"]) }),
    callback("h-4", "h:both", { filter_kinds: JSON.stringify(["invocation"]), filter_ids: JSON.stringify(["i-1", "s-1"]) }),
    callback("h-5", "h:elsewhere", { host_id: "host-b" }),
    callback("h-6", "h:disabled", { enabled: 0 }),
  ],
  consumers: [
    consumer("cb:1"),
    consumer("cb:2a"),
    consumer("cb:2b", 2),
    consumer("cb:3"),
    consumer("cb:retired", 0, OLD),
    consumer("h:all"),
    consumer("h:sessions", 3),
    consumer("h:ids"),
    consumer("h:both"),
    consumer("h:elsewhere"),
    consumer("h:disabled"),
    consumer("plain", 1),
    consumer("plain-retired", 0, OLD),
  ],
  terminal_deliveries: [
    delivery("t-1", "h:all", "acked", { acked_at: OLD }),
    delivery("t-2", "h:all", "claimed", { claimed_until: NOW + 30 }),
    delivery("t-3", "h:all", "claimed", { claimed_until: NOW - 1, attempts: 2 }),
    delivery("t-4", "h:all", "retry", { next_attempt_at: NOW + 60, last_error: "exit 1" }),
    delivery("t-6", "h:all", "retry", { next_attempt_at: NOW - 60, last_error: "exit 2", attempts: 3 }),
    delivery("t-7", "h:all", "dead", { last_error: "gave up", attempts: 5 }),
    delivery("t-2", "cb:2a", "claimed", { claimed_until: NOW - 5 }),
    delivery("t-4", "plain", "acked", { acked_at: OLD }),
    delivery("t-6", "plain", "dead", { last_error: "x", attempts: 5, updated_at: OLD + 1 }),
    delivery("t-1", "cb:1", "retry", { next_attempt_at: NOW, attempts: 1 }),
  ],
};

describePostgres("the notify store on PostgreSQL answers as SQLite's does (§9)", () => {
  const db = usePostgresDatabase();
  let pgClient: PgClient;
  let liteDb: Database;
  let pg: PgNotifyStore;
  let lite: SqliteNotifyStore;
  const now = () => NOW;

  beforeAll(async () => {
    pgClient = await pgLedgerClient(db);
    liteDb = sqliteLedgerDb();
    await arrange(liteDb, pgClient, ROWS);
    pg = PgNotifyStore.on(pgClient.sql, now);
    lite = new SqliteNotifyStore(liteDb, now);
  });
  afterAll(async () => {
    await pgClient.close();
    liteDb.close();
  });

  test("owed to handlers: every filter of the query, held rows in or out, and the limit", async () => {
    const queries: Omit<OwedQuery, "limit">[] = [
      {},
      { hostId: "host-a" },
      { hostId: "host-b" },
      { transitionId: "t-2" },
      { transitionId: "t-1", hostId: "host-a" },
      { consumer: "h:all" },
      { consumer: "h:all", includeHeld: true },
      { consumer: "cb:2a", includeHeld: true },
      { includeHeld: true },
    ];
    for (const query of queries) {
      for (const limit of [1, 3, 1000]) {
        const expected = lite.owedToHandlers({ ...query, limit });
        expect({ query, limit, owed: await pg.owedToHandlers({ ...query, limit }) }).toEqual({ query, limit, owed: expected });
      }
    }
    // Not vacuous: the arrangement owes something to leg registrations and to each kind of filter.
    const owed = lite.owedToHandlers({ limit: 1000 }).map((o) => `${o.consumer}@${o.transition_id}`);
    expect(owed).toEqual(expect.arrayContaining(["cb:1@t-1", "cb:2a@t-2", "cb:2b@t-4", "cb:3@t-6", "h:all@t-3", "h:all@t-6", "h:sessions@t-4", "h:ids@t-3", "h:both@t-3", "h:elsewhere@t-8"]));
    expect(owed).not.toContain("h:all@t-2");
    expect(owed).not.toContain("h:disabled@t-1");
  });

  test("owed to a plain consumer, dead deliveries, and the lookups", async () => {
    for (const name of ["plain", "plain-retired", "h:all", "nobody"]) {
      for (const limit of [1, 1000]) expect(await pg.owedToConsumer(name, limit)).toEqual(lite.owedToConsumer(name, limit));
    }
    expect((await pg.owedToConsumer("plain", 1000)).map((t) => t.id)).toEqual(["t-2", "t-3", "t-7", "t-8"]);
    expect(await pg.listDead(10)).toEqual(lite.listDead(10));
    expect(await pg.maxSeq()).toBe(8);
    for (const id of ["t-1", "t-3", "t-4", "nope"]) {
      expect(await pg.getTransition(id)).toEqual(lite.getTransition(id));
      expect(await pg.eventContext(id)).toEqual(await lite.eventContext(id));
    }
    expect((await pg.eventContext("t-2"))?.leg?.id).toBe("l-2a");
    expect(await pg.getDelivery("t-3", "h:all")).toEqual(lite.getDelivery("t-3", "h:all"));
    for (const name of ["h:all", "plain", "nope"]) {
      expect(await pg.getConsumer(name)).toEqual(lite.getConsumer(name));
      expect(await pg.getCallbackByConsumer(name)).toEqual(lite.getCallbackByConsumer(name));
    }
    for (const opts of [{}, { scope: "leg" as const }, { scope: "standing" as const, includeRetired: true }, { includeRetired: true }]) {
      expect(await pg.listCallbacks(opts)).toEqual(lite.listCallbacks(opts));
    }
  });

  test("the prune's owed check finds the same sessions, batch by batch", async () => {
    const scope = { terminalStatuses: SESSION_TERMINAL_STATUSES, cutoff: NOW };
    for (const batch of [["s-1", "s-2", "s-3", "s-4"], ["s-4"], ["s-3", "nope"], []]) {
      const onPg = (await pgClient.sql.begin((tx) => pgSweeps.pruneStatement(tx, "find_owed", batch, scope))).ids ?? [];
      const onLite = liteSweeps.pruneStatement(liteDb, "find_owed", batch, scope).ids ?? [];
      expect([...new Set(onPg)].sort()).toEqual([...new Set(onLite)].sort());
    }
    expect(new Set(liteSweeps.pruneStatement(liteDb, "find_owed", ["s-1", "s-2", "s-3", "s-4"], scope).ids)).toEqual(new Set(["s-1", "s-2", "s-3", "s-4"]));
  });

  test("writes: each changes what SQLite's changes, and returns the same counts", async () => {
    // Both ledgers get the same writes; then every table they touched is compared row by row.
    const ops: Array<[string, (s: PgNotifyStore | SqliteNotifyStore) => unknown]> = [
      ["insert a consumer", (s) => s.insertConsumer(consumer("new", 4) as never)],
      ["insert an existing consumer", (s) => s.insertConsumer(consumer("plain", 9) as never)],
      ["reactivate a retired consumer", (s) => s.reactivateConsumer("plain-retired", 7, NOW)],
      ["reactivate a live one", (s) => s.reactivateConsumer("plain", 7, NOW)],
      ["retire a consumer", (s) => s.retireConsumer("h:both", NOW)],
      ["release it", (s) => s.releaseConsumer("h:all")],
      ["insert a registration", (s) => s.insertCallback(callback("r-new", "cb:new", { scope: "leg", name: null, session_id: "s-4", leg_id: "l-x" }) as never)],
      ["move leg registrations", (s) => s.moveLegCallbacks("l-x", "l-y")],
      ["retire a registration", (s) => s.retireCallback("r-new", NOW)],
      ["delete retired registrations", (s) => s.deleteRetiredCallback("cb:new")],
      ["ack by hand", (s) => s.ackByHand("t-8", "plain")],
      ["ack by hand again", (s) => s.ackByHand("t-8", "plain")],
    ];
    for (const [what, op] of ops) expect({ what, result: await op(pg) }).toEqual({ what, result: await op(lite) });
    for (const table of ["consumers", "terminal_callbacks", "terminal_deliveries"]) {
      const order = table === "consumers" ? "name" : table === "terminal_callbacks" ? "id" : "transition_id, consumer";
      const fromPg = (await pgClient.sql.unsafe(`SELECT * FROM ${table} ORDER BY ${order}`)).map((r: Record<string, unknown>) => ({ ...r, watermark: r.watermark === undefined ? undefined : Number(r.watermark) }));
      const fromLite = liteDb.query(`SELECT * FROM ${table} ORDER BY ${order}`).all().map((r) => ({ ...(r as object), watermark: (r as { watermark?: number }).watermark }));
      expect({ table, rows: fromPg }).toEqual({ table, rows: fromLite });
    }
  });
});
