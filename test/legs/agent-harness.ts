// Helpers for end-to-end tests of `li agent`: a temp LI_HOME, the ledger's rows, the one running session.

import fs from "node:fs";
import path from "node:path";
import { tempDir } from "../helpers/ledger.ts";
import { ledgerRows, type LedgerRows, type SqlParam } from "../helpers/ledger-rows.ts";
import { LI_BINARY, liEnv } from "../helpers/cli.ts";
import { until } from "../helpers/until.ts";

export interface AgentHome {
  home: string;
  /** The home's ledger rows, on the suite's backend. */
  db: LedgerRows;
  runs: string;
  /** A scratch directory for pid files, ready files and the like. */
  scratch: string;
}

export function agentHome(): AgentHome {
  const root = tempDir("li-agent-");
  const home = path.join(root, "home");
  const scratch = path.join(root, "scratch");
  fs.mkdirSync(scratch);
  return { home, db: ledgerRows(home), runs: path.join(home, "runs"), scratch };
}

/** Rows of one SQL query against the ledger. */
export function rows<T = Record<string, unknown>>(db: LedgerRows, query: string, ...params: SqlParam[]): Promise<T[]> {
  return db.all<T>(query, ...params);
}

export async function sessionRow(db: LedgerRows, id: string): Promise<Record<string, any>> {
  const row = (await rows(db, "SELECT * FROM sessions WHERE id = ?", id))[0];
  if (!row) throw new Error(`no session ${id}`);
  return row as Record<string, any>;
}

export function readIf(file: string): string | null {
  try {
    return fs.readFileSync(file, "utf8");
  } catch {
    return null;
  }
}

/** Starts li in the background (for signals and races); output collected. */
export function spawnLi(args: string[], home: AgentHome, opts: { cwd?: string; env?: Record<string, string | undefined> } = {}) {
  const proc = Bun.spawn([LI_BINARY, ...args], {
    cwd: opts.cwd ?? process.cwd(),
    env: liEnv(home.home, opts.env),
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const out = Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]).then(([stdout, stderr, code]) => ({ stdout, stderr, code }));
  return { proc, out };
}

/** The one running session's id, once it appears. */
export async function runningSession(db: LedgerRows): Promise<string> {
  return until("a running session", async () => (await db.exists()) && (await rows<{ id: string }>(db, "SELECT id FROM sessions WHERE status = 'running'"))[0]?.id);
}
