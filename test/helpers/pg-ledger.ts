// A PostgreSQL ledger of its own for a PostgreSQL-specific test (test/ledger/postgres/): one fresh schema
// in the file's database (usePostgresDatabase), opened through openLedger exactly as li opens a
// `postgres://` location, plus a superuser connection on that schema to arrange and read rows by hand.
// The schema travels in the URL (`search_path`), so the same URL in LI_DB points a spawned li or worker
// at the same ledger with nothing else in its environment.

import { afterEach } from "bun:test";
import type { Subprocess } from "bun";
import { connectPg, type PgClient } from "../../src/ledger/postgres/client.ts";
import { ledgerRowsOnPostgres, type LedgerRows } from "./ledger-rows.ts";
import { resolvePgTarget } from "../../src/ledger/postgres/options.ts";
import { resolvePaths, type Paths } from "../../src/ledger/location.ts";
import { openLedger } from "../../src/ledger/open.ts";
import type { Ledger, LedgerOptions } from "../../src/ledger/ledger.ts";
import { tempDir } from "./ledger.ts";
import type { PgDatabase } from "./postgres.ts";
import { startTcpProxy, type TcpProxy } from "./tcp-proxy.ts";
import { closeAfterTest } from "./test-handles.ts";

export interface PgTestLedger {
  /** The ledger's URL: the file's database with this ledger's schema as its search_path. */
  url: string;
  schema: string;
  /** A temp LI_HOME (run directories, the watcher's files) for li processes on this ledger. */
  home: string;
  paths: Paths;
  /** The environment a spawned li needs, beside liEnv's: LI_DB (the URL). */
  env: { LI_DB: string };
  ledger: Ledger;
  /** Another Ledger on the same ledger with its own pool: a real second connection. */
  open(options?: LedgerOptions): Ledger;
  /** The superuser on this ledger's schema (unqualified table names are li's). */
  raw: PgClient;
  /** The same rows through the suite's portable helper (history invariants, dumps). */
  rows(): LedgerRows;
  close(): Promise<void>;
}

let counter = 0;

export async function pgTestLedger(db: PgDatabase, options: LedgerOptions = {}): Promise<PgTestLedger> {
  if (!db.url) throw new Error("pgTestLedger: the file's database is not created yet (call it inside a test)");
  const schema = `p${process.pid}_${++counter}`;
  const url = `${db.url}&search_path=${schema}`;
  const home = tempDir("li-pg-home-");
  const paths = resolvePaths({ env: { LI_HOME: home, LI_DB: url } });
  const opened: Ledger[] = [];
  const open = (more: LedgerOptions = {}) => {
    const ledger = openLedger(paths, { create: true, ...options, ...more });
    opened.push(ledger);
    return ledger;
  };
  const ledger = open();
  // The first operation migrates the schema; the raw connection needs it to exist.
  await ledger.backend.getEntity("session", "nothing");
  const raw = await connectPg(resolvePgTarget(url, {}));
  const portable: LedgerRows[] = [];
  return {
    url,
    schema,
    home,
    paths,
    env: { LI_DB: url },
    ledger,
    open,
    raw,
    rows() {
      const rows = ledgerRowsOnPostgres(db.url, schema);
      portable.push(rows);
      return rows;
    },
    async close() {
      for (const l of opened.splice(0)) l.close();
      for (const r of portable.splice(0)) await r.close();
      await raw.close();
    },
  };
}

/**
 * For a suite whose tests each open a ledger of their own and spawn li on it: `open()` is pgTestLedger,
 * `spawned` the processes to end; after each test those still running are SIGKILLed, then the ledgers
 * closed.
 */
export function usePgTestLedgers(db: PgDatabase): { open(options?: LedgerOptions): Promise<PgTestLedger>; spawned: Subprocess[] } {
  const spawned: Subprocess[] = [];
  const opened: PgTestLedger[] = [];
  afterEach(async () => {
    for (const p of spawned.splice(0)) if (p.exitCode === null && p.signalCode === null) p.kill("SIGKILL");
    for (const t of opened.splice(0)) await t.close();
  });
  return {
    spawned,
    async open(options = {}) {
      const t = await pgTestLedger(db, options);
      opened.push(t);
      return t;
    },
  };
}

/**
 * A ledger of its own reached through a loopback proxy in front of its server (tcp-proxy.ts), so a test
 * can cut the link or count the sessions li opens; both are closed after the test (test-handles.ts).
 */
export async function pgLedgerBehindProxy(db: PgDatabase): Promise<{ l: PgTestLedger; proxy: TcpProxy; url: string }> {
  const l = await pgTestLedger(db);
  closeAfterTest(() => l.close());
  const target = new URL(l.url);
  const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port) });
  closeAfterTest(() => proxy.close());
  return { l, proxy, url: proxy.via(l.url) };
}
