// Where the ledger and the run directories live (SPEC §3): LI_HOME, LI_DB, --db, LI_RUNS_ROOT.

import { homedir } from "node:os";
import { isAbsolute, join, resolve } from "node:path";

export type LedgerLocation = { kind: "sqlite"; path: string } | { kind: "postgres"; url: string };

export interface Paths {
  home: string;
  runsRoot: string;
  ledger: LedgerLocation;
}

function expandHome(p: string): string {
  return p === "~" ? homedir() : p.startsWith("~/") ? join(homedir(), p.slice(2)) : p;
}

export function isPostgresUrl(value: string): boolean {
  return /^postgres(ql)?:\/\//i.test(value);
}

/** Resolves every path once per process; `--db` beats `LI_DB` beats `$LI_HOME/state.db`. */
export function resolvePaths(opts: { dbFlag?: string | undefined; env?: NodeJS.ProcessEnv; cwd?: string } = {}): Paths {
  const env = opts.env ?? process.env;
  const cwd = opts.cwd ?? process.cwd();
  const abs = (p: string) => (isAbsolute(p) ? p : resolve(cwd, p));
  const home = abs(expandHome(env.LI_HOME || join(homedir(), ".li")));
  const runsRoot = abs(expandHome(env.LI_RUNS_ROOT || join(home, "runs")));
  const db = opts.dbFlag || env.LI_DB;
  const ledger: LedgerLocation = !db
    ? { kind: "sqlite", path: join(home, "state.db") }
    : isPostgresUrl(db)
      ? { kind: "postgres", url: db }
      : { kind: "sqlite", path: abs(expandHome(db)) };
  return { home, runsRoot, ledger };
}

/** A location safe to print: a postgres URL loses its password. */
export function describeLocation(location: LedgerLocation): string {
  if (location.kind === "sqlite") return location.path;
  try {
    const url = new URL(location.url);
    if (url.password) url.password = "***";
    return url.toString();
  } catch {
    return "postgres://(unparseable url)";
  }
}
