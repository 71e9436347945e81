// The one way a test reads or arranges ledger rows by hand (backdating, rewriting markers, deleting
// rows), on either backend: `?` placeholders and portable SQL; numbers come back as numbers on both.

import { Database } from "bun:sqlite";
import { SQL } from "bun";
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { onPostgres, schemaForHome, SUITE_DB_URL_VARIABLE } from "./backends.ts";
import { closeAfterTestOnce } from "./test-handles.ts";

export type SqlParam = string | number | null;
export type Row = Record<string, unknown>;

export interface LedgerRows {
  /** Whether the ledger exists at all (the SQLite file; the home's PostgreSQL schema). */
  exists(): Promise<boolean>;
  /** Runs a write; returns how many rows it changed. */
  run(sql: string, ...params: SqlParam[]): Promise<number>;
  /** Runs writes in one transaction: all or none. */
  runAll(statements: [sql: string, ...params: SqlParam[]][]): Promise<void>;
  /** The first row, or null. */
  get<T = Row>(sql: string, ...params: SqlParam[]): Promise<T | null>;
  all<T = Row>(sql: string, ...params: SqlParam[]): Promise<T[]>;
  /** Every row of every table, in a stable order, for "the ledger is unchanged" assertions. */
  dump(): Promise<Record<string, Row[]>>;
  /** §5's history invariants broken anywhere (status = newest history row, each previous = the row before). */
  historyProblems(): Promise<string[]>;
  /**
   * What the database itself says is damaged: SQLite's integrity check (a killed writer must not corrupt
   * the file). PostgreSQL has no file a killed client can damage: the server's own WAL covers it, so
   * there is nothing to ask and the list is empty.
   */
  integrityProblems(): Promise<string[]>;
  /** Legs whose session is missing, and sessions whose current leg is missing. */
  orphanLegs(): Promise<string[]>;
  close(): Promise<void>;
}

/** A statement's `?` placeholders as `$1…$n`, leaving quoted text ('…', "…") alone. */
export function numberedPlaceholders(sql: string): string {
  let out = "";
  let n = 0;
  let quote: string | null = null;
  for (const ch of sql) {
    if (quote) {
      if (ch === quote) quote = null;
      out += ch;
    } else if (ch === "'" || ch === '"') {
      quote = ch;
      out += ch;
    } else if (ch === "?") {
      out += `$${++n}`;
    } else {
      out += ch;
    }
  }
  return out;
}

/**
 * Values as SQLite gives them: PostgreSQL's bigint columns arrive as BigInt (the client is asked for
 * them) and its booleans (`x IS NULL AS closed`) as true/false; SQLite has 1/0 for both.
 */
function asNumbers(row: Row): Row {
  const out: Row = {};
  for (const [k, v] of Object.entries(row)) out[k] = typeof v === "bigint" ? Number(v) : typeof v === "boolean" ? Number(v) : v;
  return out;
}

const HISTORY_TABLES: Record<string, string> = { session: "sessions", invocation: "invocations", schedule_run: "schedule_runs", play: "plays", show: "shows", team: "teams" };

/** The checks both backends share, over `all`. */
function withChecks(base: Omit<LedgerRows, "historyProblems" | "orphanLegs">): LedgerRows {
  return {
    ...base,
    async historyProblems() {
      const problems: string[] = [];
      for (const [kind, table] of Object.entries(HISTORY_TABLES)) {
        for (const row of await base.all<{ id: string; status: string }>(`SELECT id, status FROM ${table}`)) {
          const history = await base.all<{ previous_status: string | null; status: string }>(
            "SELECT previous_status, status FROM status_transitions WHERE entity_type = ? AND entity_id = ? ORDER BY seq",
            kind,
            row.id,
          );
          if (history.length === 0) problems.push(`${kind} ${row.id}: no history`);
          else if (history.at(-1)!.status !== row.status) problems.push(`${kind} ${row.id}: status ${row.status} but newest history ${history.at(-1)!.status}`);
          for (let i = 1; i < history.length; i++) {
            if (history[i]!.previous_status !== history[i - 1]!.status) problems.push(`${kind} ${row.id}: history row ${i} previous ${history[i]!.previous_status} ≠ ${history[i - 1]!.status}`);
          }
          if (history.length > 0 && history[0]!.previous_status !== null) problems.push(`${kind} ${row.id}: first history row has a previous status`);
        }
      }
      return problems;
    },
    async orphanLegs() {
      const legs = await base.all<{ id: string }>("SELECT l.id FROM legs l LEFT JOIN sessions s ON s.id = l.session_id WHERE s.id IS NULL ORDER BY l.id");
      const sessions = await base.all<{ id: string }>(
        "SELECT s.id FROM sessions s LEFT JOIN legs l ON l.id = s.current_leg_id WHERE s.current_leg_id IS NOT NULL AND l.id IS NULL ORDER BY s.id",
      );
      return [...legs.map((l) => `leg ${l.id}: no session`), ...sessions.map((s) => `session ${s.id}: current leg missing`)];
    },
  };
}

/**
 * How long a by-hand statement waits for another connection's lock. bun:sqlite's default is 0: a write
 * made while a li process (a leg's heartbeat, a watcher's sweep) held the write lock for a millisecond
 * failed at once with "database is locked", and so did a first read racing another process's open or
 * last close of the WAL file.
 */
const BUSY_TIMEOUT_MS = 10_000;

function sqliteRows(path: string): LedgerRows {
  let db: Database | undefined;
  // Opened on first use (a test may take the handle before li created the file), never created here.
  const open = () => {
    if (db) return db;
    const opened = new Database(path, { readwrite: true, create: false });
    opened.run(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
    return (db = opened);
  };
  return withChecks({
    async exists() {
      return existsSync(path);
    },
    async integrityProblems() {
      return open().query<{ integrity_check: string }, []>("PRAGMA integrity_check").all().map((r) => r.integrity_check).filter((r) => r !== "ok");
    },
    async run(sql, ...params) {
      return open().query(sql).run(...params).changes;
    },
    async runAll(statements) {
      const db = open();
      db.transaction(() => {
        for (const [sql, ...params] of statements) db.query(sql).run(...params);
      }).immediate();
    },
    async get(sql, ...params) {
      return (open().query(sql).get(...params) as never) ?? null;
    },
    async all(sql, ...params) {
      return open().query(sql).all(...params) as never;
    },
    async dump() {
      const tables = open().query<{ name: string }, []>("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all();
      const out: Record<string, Row[]> = {};
      for (const { name } of tables) out[name] = open().query(`SELECT * FROM "${name}" ORDER BY rowid`).all() as Row[];
      return out;
    },
    async close() {
      db?.close();
      db = undefined;
    },
  });
}

function postgresRows(url: string, schema: string): LedgerRows {
  let client: SQL | undefined;
  // Connected on first use and again after close(), like the SQLite handle.
  const sql = () => (client ??= new SQL({ url, max: 1, bigint: true, idleTimeout: 0, connection: { search_path: `"${schema}"` } }));
  const all = async <T>(text: string, params: SqlParam[]): Promise<T[]> => {
    const rows = (await sql().unsafe(numberedPlaceholders(text), params)) as Row[];
    return rows.map(asNumbers) as T[];
  };
  return withChecks({
    async integrityProblems() {
      return [];
    },
    async exists() {
      return (await all("SELECT 1 AS one FROM information_schema.schemata WHERE schema_name = ?", [schema])).length > 0;
    },
    async run(text, ...params) {
      const result = (await sql().unsafe(numberedPlaceholders(text), params)) as { count: number | null };
      return result.count ?? 0;
    },
    async runAll(statements) {
      await sql().begin(async (tx) => {
        for (const [text, ...params] of statements) await tx.unsafe(numberedPlaceholders(text), params);
      });
    },
    async get(text, ...params) {
      return ((await all(text, params))[0] as never) ?? null;
    },
    all: (text, ...params) => all(text, params),
    async dump() {
      const tables = await all<{ name: string }>("SELECT table_name AS name FROM information_schema.tables WHERE table_schema = ? AND table_type = 'BASE TABLE' ORDER BY table_name", [schema]);
      const out: Record<string, Row[]> = {};
      for (const { name } of tables) out[name] = await all<Row>(`SELECT * FROM "${name}" t ORDER BY t::text`, []);
      return out;
    },
    async close() {
      const closing = client;
      client = undefined;
      await closing?.close({ timeout: 5 });
    },
  });
}

/** One handle per ledger for the whole run: it connects on use and is closed after each test that used it. */
const handles = new Map<string, LedgerRows>();

/** Wraps `rows` so every use inside a test has it closed (disconnected) after that test. */
function closedAfterEachTest(rows: LedgerRows): LedgerRows {
  const touch = () => closeAfterTestOnce(rows, () => rows.close());
  const wrapped = {} as LedgerRows;
  for (const [name, fn] of Object.entries(rows) as [keyof LedgerRows, (...args: unknown[]) => unknown][]) {
    (wrapped as unknown as Record<string, unknown>)[name] = name === "close" ? fn : (...args: unknown[]) => (touch(), fn(...args));
  }
  return wrapped;
}

/** A PostgreSQL ledger's rows by database URL and schema: for the PostgreSQL-specific tests, whose ledgers are their own (pg-ledger.ts). */
export function ledgerRowsOnPostgres(url: string, schema: string): LedgerRows {
  return postgresRows(url, schema);
}

/**
 * The ledger of the test home `home` (the LI_HOME a test gives li): `$home/state.db` on SQLite, the
 * home's schema in the suite's database on PostgreSQL (test/helpers/backends.ts). `sqlitePath`
 * overrides the file on SQLite (a ledger somewhere else, named by --db or LI_DB). The same handle comes
 * back for the same ledger; it reconnects on use and is closed after each test that used it.
 */
export function ledgerRows(home: string, options: { sqlitePath?: string } = {}): LedgerRows {
  let key: string;
  let make: () => LedgerRows;
  if (onPostgres) {
    const url = process.env[SUITE_DB_URL_VARIABLE];
    if (!url) throw new Error(`LI_TEST_BACKEND=postgres but ${SUITE_DB_URL_VARIABLE} is not set (the preload test/helpers/postgres-suite.ts sets it)`);
    const schema = schemaForHome(home);
    key = `pg:${schema}`;
    make = () => postgresRows(url, schema);
  } else {
    const path = options.sqlitePath ?? join(home, "state.db");
    key = `sqlite:${resolve(path)}`;
    make = () => sqliteRows(path);
  }
  let rows = handles.get(key);
  if (!rows) {
    rows = closedAfterEachTest(make());
    handles.set(key, rows);
  }
  return rows;
}
