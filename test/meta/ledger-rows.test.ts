// The suite's by-hand rows (test/helpers/ledger-rows.ts) wait for another process's SQLite write lock, as
// li does, instead of failing at once: a test backdating a row while a leg heartbeats must not flake.

import { expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describeSqliteOnly } from "../helpers/backends.ts";
import { ledgerRows } from "../helpers/ledger-rows.ts";
import { lineReader } from "../helpers/lines.ts";
import { tempDir } from "../helpers/ledger.ts";

const HELPERS = join(import.meta.dir, "../helpers");

/** Takes the write lock, writes one row, says "held", and commits once the file `release` exists. */
const HOLDER = `
import { Database } from "bun:sqlite";
import { existsSync } from "node:fs";
import { until } from ${JSON.stringify(join(HELPERS, "until.ts"))};
const [file, release] = process.argv.slice(1);
const db = new Database(file);
db.run("BEGIN IMMEDIATE");
db.run("INSERT INTO t (x) VALUES ('holder')");
process.stdout.write("held\\n");
await until("the release", () => existsSync(release), { timeoutMs: 60_000 });
db.run("COMMIT");
db.close();
`;

/** A by-hand write through ledgerRows, in a process of its own (the busy wait blocks its thread): says "trying", then the rows it changed. */
const WRITER = `
import { ledgerRows } from ${JSON.stringify(join(HELPERS, "ledger-rows.ts"))};
process.stdout.write("trying\\n");
try {
  process.stdout.write(String(await ledgerRows(process.argv[1]).run("INSERT INTO t (x) VALUES ('by hand')")) + "\\n");
} catch (error) {
  process.stdout.write("error: " + error.message + "\\n");
}
`;

describeSqliteOnly("write-lock-held")("by-hand rows on SQLite", () => {
  test("a write made while another process holds the write lock waits for it, and lands after that process's commit", async () => {
    const home = tempDir();
    const file = join(home, "state.db");
    const release = join(home, "release");
    const setup = new Database(file);
    setup.run("PRAGMA journal_mode = WAL");
    setup.run("CREATE TABLE t (id INTEGER PRIMARY KEY, x TEXT)");
    setup.close();
    const holder = Bun.spawn([process.execPath, "-e", HOLDER, file, release], { stdout: "pipe", stderr: "inherit" });
    try {
      expect(await lineReader(holder.stdout)()).toBe("held");
      const writer = Bun.spawn([process.execPath, "-e", WRITER, home], { stdout: "pipe", stderr: "inherit" });
      const next = lineReader(writer.stdout);
      expect(await next()).toBe("trying");
      // The lock is still held (only this test releases it): with bun:sqlite's own default (no busy
      // timeout) the write had already failed with "database is locked" by now.
      writeFileSync(release, "");
      expect(await next()).toBe("1");
      expect(await writer.exited).toBe(0);
    } finally {
      if (!existsSync(release)) writeFileSync(release, "");
      await holder.exited;
    }
    expect(holder.exitCode).toBe(0);
    expect(await ledgerRows(home).all("SELECT x FROM t ORDER BY id")).toEqual([{ x: "holder" }, { x: "by hand" }]);
  });
});
