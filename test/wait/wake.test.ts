import { Database } from "bun:sqlite";
import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { watchSqliteFile } from "../../src/ledger/sqlite/wake.ts";
import { pollingOnly } from "../../src/ledger/wake.ts";
import { tempDir } from "../helpers/ledger.ts";
import { sentinelPath } from "../helpers/sentinel.ts";
import { until } from "../helpers/until.ts";
import { describeSqliteOnly } from "../helpers/backends.ts";

function walDatabase(dir: string): Database {
  const db = new Database(join(dir, "state.db"));
  db.run("PRAGMA journal_mode = WAL");
  db.run("CREATE TABLE t (x INTEGER)");
  return db;
}

describeSqliteOnly("file-wake")("watchSqliteFile", () => {
  test("a commit by another connection moves the generation, and changed() resolves on it", async () => {
    const dir = tempDir();
    const db = walDatabase(dir);
    const wake = watchSqliteFile(join(dir, "state.db"));
    try {
      expect(wake.watching).toBe(true);
      const before = wake.generation;
      const woke = wake.changed(before, 60_000);
      db.run("INSERT INTO t VALUES (1)");
      await woke;
      expect(wake.generation).toBeGreaterThan(before);
    } finally {
      wake.close();
      db.close();
    }
  });

  test("an event between reading the generation and waiting is not lost (arm, check, wait)", async () => {
    const dir = tempDir();
    const db = walDatabase(dir);
    const wake = watchSqliteFile(join(dir, "state.db"));
    try {
      const seen = wake.generation;
      db.run("INSERT INTO t VALUES (1)");
      await until("the commit's file event, before we start waiting", () => wake.generation !== seen, { intervalMs: 1 });
      await wake.changed(seen, 60_000); // returns at once rather than waiting for the next event
      expect(wake.generation).not.toBe(seen);
    } finally {
      wake.close();
      db.close();
    }
  });

  test("re-checks go on after the last event: a commit that becomes visible only after the early ones is still seen", async () => {
    const dir = tempDir();
    const db = walDatabase(dir);
    const wake = watchSqliteFile(join(dir, "state.db"));
    try {
      const before = wake.generation;
      db.run("INSERT INTO t VALUES (1)");
      // The writer descheduled between sending its commit and publishing it: the commit is only "visible"
      // once the event and the re-checks at 3 and 25 ms have come and gone. A later re-check still comes.
      const early = await until("the commit's event and its first two re-checks", () => (wake.generation >= before + 3 ? wake.generation : null), { intervalMs: 1 });
      await until("a re-check after the commit became visible", () => wake.generation > early);
    } finally {
      wake.close();
      db.close();
    }
  });

  test("files other than the database and its -wal do not wake it", async () => {
    const dir = tempDir();
    const db = walDatabase(dir);
    const wake = watchSqliteFile(join(dir, "state.db"));
    try {
      const before = wake.generation;
      writeFileSync(join(dir, "unrelated.txt"), "x");
      await wake.changed(before, 150);
      expect(wake.generation).toBe(before);
    } finally {
      wake.close();
      db.close();
    }
  });

  test("a directory that cannot be watched falls back to polling only", async () => {
    const wake = watchSqliteFile(sentinelPath("li-dir", "state.db"));
    expect(wake.watching).toBe(false);
    await wake.changed(wake.generation, 10);
    wake.close();
  });
});

describe("pollingOnly", () => {
  test("never fires by itself: changed() ends at its timeout", async () => {
    const wake = pollingOnly();
    await wake.changed(wake.generation, 10);
    expect(wake.generation).toBe(0);
    expect(wake.watching).toBe(false);
  });
});
