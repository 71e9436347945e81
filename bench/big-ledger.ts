// A ledger of many terminal sessions for the scale benches (wait-cold, ls-scale): migrations applied by
// li's own open, then multi-row inserts in one transaction (1,000,000 sessions in ~15 s).

import { Database } from "bun:sqlite";
import { join } from "node:path";
import { openLedger } from "../src/ledger/open.ts";
import { resolvePaths } from "../src/ledger/location.ts";

export const SESSION_COLUMNS = "(id, status, status_reason_code, created_at, updated_at, started_at, ended_at, exit_code)";

/**
 * Creates `home/state.db` holding `rows` completed sessions, one a second up to now (newest last), and
 * lets `more` add rows in the same transaction. Returns the database path.
 */
export function bigLedger(home: string, rows: number, more?: (db: Database, now: number) => void): string {
  openLedger(resolvePaths({ env: { LI_HOME: home } }), { create: true }).close(); // migrations applied
  const path = join(home, "state.db");
  const db = new Database(path);
  db.run("PRAGMA synchronous = OFF");
  const started = performance.now();
  db.run("BEGIN");
  const now = Date.now() / 1000;
  const PER = 500;
  const batch = db.prepare(`INSERT INTO sessions ${SESSION_COLUMNS} VALUES ${Array(PER).fill("(?, 'completed', 'run.completed.ok', ?, ?, ?, ?, 0)").join(",")}`);
  for (let done = 0; done + PER <= rows; done += PER) {
    const params: (string | number)[] = [];
    for (let i = 0; i < PER; i++) {
      const t = now - (rows - done - i);
      params.push(crypto.randomUUID(), t, t, t, t);
    }
    batch.run(...params);
  }
  for (let i = rows - (rows % PER); i < rows; i++) {
    const t = now - (rows - i);
    db.run(`INSERT INTO sessions ${SESSION_COLUMNS} VALUES (?, 'completed', 'run.completed.ok', ?, ?, ?, ?, 0)`, [crypto.randomUUID(), t, t, t, t]);
  }
  more?.(db, now);
  db.run("COMMIT");
  db.close();
  if (rows >= 100_000) console.log(`generated ${rows} sessions in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  return path;
}
