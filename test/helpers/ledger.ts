// Test helpers: a temporary ledger with a controllable clock and ids, and a full dump for before/after checks.

import { Database } from "bun:sqlite";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Ledger, type LedgerOptions } from "../../src/ledger/ledger.ts";
import { openLedger } from "../../src/ledger/open.ts";
import { resolvePaths, type Paths } from "../../src/ledger/location.ts";

export function tempDir(prefix = "li-test-"): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** A clock that only moves when told to. */
export function fakeClock(start = 1_800_000_000): { now: () => number; advance: (s: number) => void; set: (t: number) => void } {
  let t = start;
  return { now: () => t, advance: (s) => (t += s), set: (v) => (t = v) };
}

/** Sequential, readable ids: id-0001, id-0002, … */
export function sequentialIds(prefix = "id"): () => string {
  let n = 0;
  return () => `${prefix}-${String(++n).padStart(4, "0")}`;
}

export interface TempLedger {
  ledger: Ledger;
  paths: Paths;
  home: string;
  dbPath: string;
  /** Every row of every table, for "the database is unchanged" assertions. */
  dump(): Record<string, unknown[]>;
}

export function tempLedger(options: LedgerOptions = {}): TempLedger {
  const home = tempDir();
  const paths = resolvePaths({ env: { LI_HOME: join(home, "home") } });
  const ledger = openLedger(paths, { create: true, ...options });
  const dbPath = (paths.ledger as { path: string }).path;
  return { ledger, paths, home, dbPath, dump: () => dumpDatabase(dbPath) };
}

export function dumpDatabase(path: string): Record<string, unknown[]> {
  const db = new Database(path, { readonly: true });
  try {
    const tables = db.query<{ name: string }, []>("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all();
    const out: Record<string, unknown[]> = {};
    for (const { name } of tables) out[name] = db.query(`SELECT * FROM "${name}" ORDER BY rowid`).all();
    return out;
  } finally {
    db.close();
  }
}

/** The history invariants of §5: status = newest history row; each row's previous = the row before it. */
export function checkHistoryInvariants(path: string): string[] {
  const db = new Database(path, { readonly: true });
  const problems: string[] = [];
  try {
    const tables: Record<string, string> = { session: "sessions", invocation: "invocations", schedule_run: "schedule_runs", play: "plays", show: "shows", team: "teams" };
    for (const [kind, table] of Object.entries(tables)) {
      for (const row of db.query<{ id: string; status: string }, []>(`SELECT id, status FROM ${table}`).all()) {
        const history = db
          .query<{ previous_status: string | null; status: string }, [string, string]>("SELECT previous_status, status FROM status_transitions WHERE entity_type = ? AND entity_id = ? ORDER BY seq")
          .all(kind, row.id);
        if (history.length === 0) problems.push(`${kind} ${row.id}: no history`);
        else if (history.at(-1)!.status !== row.status) problems.push(`${kind} ${row.id}: status ${row.status} but newest history ${history.at(-1)!.status}`);
        for (let i = 1; i < history.length; i++) {
          if (history[i]!.previous_status !== history[i - 1]!.status) problems.push(`${kind} ${row.id}: history row ${i} previous ${history[i]!.previous_status} ≠ ${history[i - 1]!.status}`);
        }
        if (history.length > 0 && history[0]!.previous_status !== null) problems.push(`${kind} ${row.id}: first history row has a previous status`);
      }
    }
  } finally {
    db.close();
  }
  return problems;
}

export { Ledger };
