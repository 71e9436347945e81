// Test helpers: a temporary ledger on the suite's backend with a controllable clock and ids, and its rows
// by hand (test/helpers/ledger-rows.ts) for before/after checks.

import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Ledger, type LedgerOptions } from "../../src/ledger/ledger.ts";
import { openLedger } from "../../src/ledger/open.ts";
import type { Paths } from "../../src/ledger/location.ts";
import { onPostgres, pathsForHome } from "./backends.ts";
import { ledgerRows, type LedgerRows, type Row } from "./ledger-rows.ts";
import { closeAfterTest } from "./test-handles.ts";

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
  /** A scratch directory; the ledger's LI_HOME is `liHome` inside it. */
  home: string;
  liHome: string;
  /** The SQLite file on the SQLite backend (SQLite-only tests); meaningless on PostgreSQL. */
  dbPath: string;
  /** The ledger's rows by hand, on either backend (opened on first use, closed after the test). */
  rows(): LedgerRows;
  /** Every row of every table, for "the database is unchanged" assertions. */
  dump(): Promise<Record<string, Row[]>>;
}

export function tempLedger(options: LedgerOptions = {}): TempLedger {
  const home = tempDir();
  const liHome = join(home, "home");
  const paths = pathsForHome(liHome);
  const ledger = openLedger(paths, { create: true, ...options });
  // PostgreSQL ledgers hold pooled connections: one opened inside a test is closed after it.
  if (onPostgres) closeAfterTest(() => ledger.close());
  let rows: LedgerRows | undefined;
  const rowsOf = () => (rows ??= ledgerRows(liHome));
  return { ledger, paths, home, liHome, dbPath: join(liHome, "state.db"), rows: rowsOf, dump: () => rowsOf().dump() };
}

export { Ledger };
