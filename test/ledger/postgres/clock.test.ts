// The ledger's clock on PostgreSQL (SPEC §14 "Time", design decision 2): this host's clock plus the
// offset to the server's, measured at the midpoint of a round trip, re-measured once a minute.

import { afterEach, expect, test } from "bun:test";
import { ServerClock, CLOCK_REMEASURE_SECONDS } from "../../../src/ledger/postgres/clock.ts";
import { PgConnection } from "../../../src/ledger/postgres/connection.ts";
import { resolvePgTarget } from "../../../src/ledger/postgres/options.ts";
import { describePostgres, usePostgresDatabase } from "../../helpers/postgres.ts";

test("the offset is the server's time minus the midpoint of the round trip", () => {
  let host = 1000;
  const clock = new ServerClock(() => host);
  expect(clock.now()).toBe(1000);
  expect(clock.stale()).toBe(true);
  clock.record(5000, 1000, 1002); // the server answered 5000 somewhere between host times 1000 and 1002
  expect(clock.offset).toBe(3999);
  host = 1010;
  expect(clock.now()).toBe(5009);
  expect(clock.stale()).toBe(false);
  host = 1002 + CLOCK_REMEASURE_SECONDS;
  expect(clock.stale()).toBe(true);
});

test("on the first round trip the server's time spent connecting does not bias the offset", () => {
  const clock = new ServerClock(() => 0);
  // Host and server agree; 1 ms out, 98 ms of connecting and authenticating on the server, 1 ms back.
  clock.record(100.099, 100, 100.1, 100.001);
  expect(clock.offset).toBeCloseTo(0, 9);
});

describePostgres("the server's clock through a connection", () => {
  const db = usePostgresDatabase();
  const open: PgConnection[] = [];
  afterEach(() => {
    for (const c of open.splice(0)) c.close();
  });

  test("a host clock 10 minutes off still reads the server's time once connected", async () => {
    for (const skew of [600, -600]) {
      const conn = new PgConnection(resolvePgTarget(db.url, {}), { create: true, hostClock: () => Date.now() / 1000 + skew });
      open.push(conn);
      expect(conn.clock.now() - Date.now() / 1000).toBeCloseTo(skew, 0); // before the first round trip: the host's
      const before = Date.now() / 1000;
      await conn.pool();
      const now = conn.clock.now();
      const after = Date.now() / 1000;
      // The server runs on this machine's clock; the midpoint estimate is off by at most half the round trip.
      expect(now).toBeGreaterThanOrEqual(before);
      expect(now).toBeLessThanOrEqual(after + (after - before));
    }
  });
});
