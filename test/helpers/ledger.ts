// Test helpers: a temporary ledger on the suite's backend with a controllable clock and ids, and its rows
// by hand (test/helpers/ledger-rows.ts) for before/after checks.

import { join } from "node:path";
import { Ledger, type LedgerOptions } from "../../src/ledger/ledger.ts";
import { openLedger } from "../../src/ledger/open.ts";
import type { Paths } from "../../src/ledger/location.ts";
import { onPostgres, pathsForHome } from "./backends.ts";
import { ledgerRows, type LedgerRows, type Row } from "./ledger-rows.ts";
import { tempDir } from "./temp-dirs.ts";
import { closeAfterTest } from "./test-handles.ts";

export { tempDir };

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
  const ledger = openHomeLedger(liHome, { create: true, ...options });
  const rows = () => rowsOf(ledger);
  // A PostgreSQL ledger connects and migrates at its first operation: a dump taken before any (the
  // "before" of an "unchanged" check) must see the migrated ledger too, so one read comes first.
  const dump = async () => {
    await ledger.ready();
    return rows().dump();
  };
  return { ledger, paths: pathsForHome(liHome), home, liHome, dbPath: join(liHome, "state.db"), rows, dump };
}

const homeOf = new WeakMap<Ledger, string>();
const rowsByLedger = new WeakMap<Ledger, LedgerRows>();

/** Opens the ledger of the test home `liHome` (its LI_HOME) on the suite's backend, in this process. */
export function openHomeLedger(liHome: string, options: LedgerOptions & { create: boolean }): Ledger {
  const ledger = openLedger(pathsForHome(liHome), options);
  homeOf.set(ledger, liHome);
  // PostgreSQL ledgers hold pooled connections: one opened inside a test is closed after it.
  if (onPostgres) closeAfterTest(() => ledger.close());
  return ledger;
}

/** The rows of a ledger opened by tempLedger or openHomeLedger, by hand (test/helpers/ledger-rows.ts). */
export function rowsOf(ledger: Ledger): LedgerRows {
  let rows = rowsByLedger.get(ledger);
  if (!rows) {
    const liHome = homeOf.get(ledger);
    if (!liHome) throw new Error("rowsOf: open the ledger with tempLedger() or openHomeLedger() so its rows can be found on either backend");
    rows = ledgerRows(liHome);
    rowsByLedger.set(ledger, rows);
  }
  return rows;
}

export { Ledger };
