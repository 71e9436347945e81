// Since when a PostgreSQL ledger has been serving (§17 item 5, src/ledger/postgres/availability.ts): the
// server's start (pg_postmaster_start_time(), so a restart moves it), or the moment this process reached
// the ledger again after losing it, whichever is later; LI_TEST_PG_STARTED_AT stands in for the start.

import { afterAll, expect, test } from "bun:test";
import { injectedServerStart, SERVER_START_ENV } from "../../../src/ledger/postgres/availability.ts";
import { asSuperuser, describePostgres, restartPostgresServer, usePostgresDatabase } from "../../helpers/postgres.ts";
import { pgTestLedger, type PgTestLedger } from "../../helpers/pg-ledger.ts";
import { LedgerUnavailableError } from "../../../src/util/errors.ts";

const serverStartedAt = () => asSuperuser(async (sql) => Number((await sql`SELECT extract(epoch from pg_postmaster_start_time())::float8 AS s`)[0].s));

describePostgres("PgBackend.availableSince (§17 item 5)", () => {
  const db = usePostgresDatabase();
  const ledgers: PgTestLedger[] = [];
  afterAll(async () => {
    for (const l of ledgers.splice(0)) await l.close();
  });
  // The suite injects a start (the throwaway cluster is seconds old); these tests ask the server.
  const saved = process.env[SERVER_START_ENV];
  const fresh = async () => {
    delete process.env[SERVER_START_ENV];
    try {
      const l = await pgTestLedger(db);
      ledgers.push(l);
      return l;
    } finally {
      if (saved !== undefined) process.env[SERVER_START_ENV] = saved;
    }
  };

  test("is the server's start while this process never lost the ledger, and moves with a restart", async () => {
    const { ledger } = await fresh();
    const before = await serverStartedAt();
    expect(await ledger.backend.availableSince!()).toBe(before);
    await restartPostgresServer();
    // The pool's first call after the restart may meet its closed connection; the next one is answered.
    await ledger.backend.getEntity("session", "x").catch(() => {});
    const after = await serverStartedAt();
    expect(after).toBeGreaterThan(before);
    const since = await ledger.backend.availableSince!();
    expect(since).toBeGreaterThanOrEqual(after);
  });

  test("asks the server for its start once while no connection of this process closed (a watcher's sweeps cost no round trip for it)", async () => {
    const { ledger, raw } = await fresh();
    await raw.sql`CREATE EXTENSION IF NOT EXISTS pg_stat_statements`;
    const asked = async () =>
      Number((await raw.sql`SELECT COALESCE(SUM(calls), 0)::int AS n FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND query LIKE '%pg_postmaster_start_time()%AS started%'`)[0].n);
    const first = await ledger.backend.availableSince!();
    const before = await asked();
    for (let i = 0; i < 5; i++) expect(await ledger.backend.availableSince!()).toBe(first);
    expect(await asked()).toBe(before);
  });

  test("after a call failed as unreachable, the first answered call is the regain: later than the server's start", async () => {
    const { ledger } = await fresh();
    await ledger.backend.getEntity("session", "x");
    let failed: unknown = null;
    await restartPostgresServer(async () => {
      failed = await ledger.backend.getEntity("session", "x").then(() => null, (e) => e);
    });
    expect(failed).toBeInstanceOf(LedgerUnavailableError);
    expect((failed as LedgerUnavailableError).unreachable).toBe(true);
    const start = await serverStartedAt();
    const beforeRegain = ledger.now();
    await ledger.backend.getEntity("session", "x");
    const since = await ledger.backend.availableSince!();
    expect(since).toBeGreaterThanOrEqual(beforeRegain);
    expect(since).toBeGreaterThan(start);
    expect(since).toBeLessThanOrEqual(ledger.now());
  });

  test("LI_TEST_PG_STARTED_AT stands in for the server's start; a bad value is refused naming the variable", async () => {
    process.env[SERVER_START_ENV] = "1000";
    try {
      const l = await pgTestLedger(db);
      ledgers.push(l);
      expect(await l.ledger.backend.availableSince!()).toBe(1000);
    } finally {
      if (saved !== undefined) process.env[SERVER_START_ENV] = saved;
      else delete process.env[SERVER_START_ENV];
    }
    expect(injectedServerStart({})).toBeNull();
    expect(injectedServerStart({ [SERVER_START_ENV]: "" })).toBeNull();
    expect(() => injectedServerStart({ [SERVER_START_ENV]: "yesterday" })).toThrow(`${SERVER_START_ENV}: expected Unix seconds, got 'yesterday'`);
  });
});
