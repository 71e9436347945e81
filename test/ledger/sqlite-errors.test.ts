// The one classifier of SQLite failures: real errors from real files, not hand-made error objects.

import { Database } from "bun:sqlite";
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { asLedgerError, classifySqliteError } from "../../src/ledger/sqlite/errors.ts";
import { LedgerUnavailableError } from "../../src/util/errors.ts";
import { tempDir, tempLedger } from "../helpers/ledger.ts";
import { describeSqliteOnly, testSqliteOnly } from "../helpers/backends.ts";

function errorOf(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error("expected the statement to fail");
}

describeSqliteOnly("sqlite-errors")("classifySqliteError", () => {
  test("a full database is unreachable (worth retrying, later spooling) and marked disk full (§20: not waited for at setup)", () => {
    const db = new Database(":memory:");
    db.run("CREATE TABLE t (x BLOB)");
    // max_page_count makes "full" deterministic: no disk needs filling.
    db.run("PRAGMA max_page_count = 2");
    const fault = classifySqliteError(errorOf(() => db.run("INSERT INTO t VALUES (randomblob(100000))")));
    expect(fault).toEqual({ reason: expect.stringMatching(/^disk full: .*\(SQLITE_FULL\)$/), unreachable: true, diskFull: true });
  });

  test("a read-only file is a refusal", () => {
    const path = join(tempDir(), "r.db");
    new Database(path).run("CREATE TABLE t (x)");
    const db = new Database(path, { readonly: true });
    expect(classifySqliteError(errorOf(() => db.run("INSERT INTO t VALUES (1)")))).toEqual({ reason: expect.stringMatching(/^read-only: .*SQLITE_READONLY/), unreachable: false });
  });

  test("a lock held past the busy timeout is unreachable", () => {
    const path = join(tempDir(), "b.db");
    const holder = new Database(path);
    holder.run("CREATE TABLE t (x)");
    holder.run("BEGIN EXCLUSIVE");
    const waiter = new Database(path);
    waiter.run("PRAGMA busy_timeout = 0");
    expect(classifySqliteError(errorOf(() => waiter.run("INSERT INTO t VALUES (1)")))).toEqual({ reason: expect.stringMatching(/^locked by another process past the busy timeout: .*SQLITE_BUSY/), unreachable: true });
    holder.run("ROLLBACK");
  });

  test("a missing li table means someone else's file", () => {
    const db = new Database(":memory:");
    expect(classifySqliteError(errorOf(() => db.query("SELECT * FROM sessions").all()))?.reason).toBe("not a li ledger (it has no table sessions)");
  });

  test("a constraint li should have prevented, or a non-SQLite error, is not a ledger fault (li's own bug)", () => {
    const db = new Database(":memory:");
    db.run("CREATE TABLE t (x PRIMARY KEY)");
    db.run("INSERT INTO t VALUES (1)");
    expect(classifySqliteError(errorOf(() => db.run("INSERT INTO t VALUES (1)")))).toBeNull();
    expect(classifySqliteError(new TypeError("x is undefined"))).toBeNull();
  });
});

testSqliteOnly("sqlite-errors")("a write transaction that hits a full database fails with the ledger's path, rolled back", async () => {
  const t = tempLedger();
  const backend = t.ledger.backend as unknown as { db: Database };
  const before = await t.dump();
  backend.db.run(`PRAGMA max_page_count = ${backend.db.query<{ page_count: number }, []>("PRAGMA page_count").get()!.page_count}`);
  const error = await t.ledger.backend
    .transaction((tx) => {
      for (let i = 0; i < 200; i++) tx.insertAdminEvent({ id: `e${i}`, event_type: "test", entity_type: null, entity_id: null, actor: null, justification: "x".repeat(4000), payload: null, created_at: 1 });
    })
    .catch((e: unknown) => e);
  expect(error).toBeInstanceOf(LedgerUnavailableError);
  expect(error).toMatchObject({ path: t.dbPath, unreachable: true, exitCode: 78 });
  expect((error as Error).message).toStartWith(`ledger ${t.dbPath}: disk full`);
  expect(asLedgerError(error, "elsewhere")).toBe(error as LedgerUnavailableError);
  expect(await t.dump()).toEqual(before);
});
