// Where the ledger and the run directories live (SPEC §3): LI_HOME, LI_DB, --db, LI_RUNS_ROOT.

import { LedgerUnavailableError } from "../util/errors.ts";
import { pgLedgerNameOfUrl, pgPasswordOfUrl } from "./postgres/redact.ts";

// node:path and node:os load only when a path needs real work: the first `node:*` import costs ~1 ms of
// start-up in the compiled binary, and the common case (absolute LI_HOME, or $HOME set) needs neither.
const nodePath = (): typeof import("node:path") => require("node:path");
const homedir = (): string => process.env.HOME || (require("node:os") as typeof import("node:os")).homedir();

/** Absolute and already normal: no empty, "." or ".." segment, no trailing slash. */
function isNormalAbsolute(p: string): boolean {
  if (p === "/") return true;
  if (!p.startsWith("/") || p.endsWith("/")) return false;
  return p.slice(1).split("/").every((segment) => segment !== "" && segment !== "." && segment !== "..");
}

/** path.resolve(cwd, p), without loading node:path when `p` is already a normal absolute path. */
function absolute(cwd: string, p: string): string {
  return isNormalAbsolute(p) ? p : nodePath().resolve(cwd, p);
}

/** path.join(dir, name) for a normal absolute `dir` and a plain file name. */
function child(dir: string, name: string): string {
  return dir === "/" ? `/${name}` : isNormalAbsolute(dir) ? `${dir}/${name}` : nodePath().join(dir, name);
}

export type LedgerLocation = { kind: "sqlite"; path: string } | { kind: "postgres"; url: string };

export interface Paths {
  home: string;
  runsRoot: string;
  ledger: LedgerLocation;
}

function expandHome(p: string): string {
  return p === "~" ? homedir() : p.startsWith("~/") ? nodePath().join(homedir(), p.slice(2)) : p;
}

export function isPostgresUrl(value: string): boolean {
  return /^postgres(ql)?:\/\//i.test(value);
}

/** Resolves every path once per process; `--db` beats `LI_DB` beats `$LI_HOME/state.db`. */
export function resolvePaths(opts: { dbFlag?: string | undefined; env?: NodeJS.ProcessEnv; cwd?: string } = {}): Paths {
  const env = opts.env ?? process.env;
  const cwd = opts.cwd ?? process.cwd();
  const abs = (p: string) => absolute(cwd, p);
  const home = abs(expandHome(env.LI_HOME || child(absolute("/", homedir()), ".li")));
  const runsRoot = abs(expandHome(env.LI_RUNS_ROOT || child(home, "runs")));
  const db = opts.dbFlag || env.LI_DB;
  const ledger: LedgerLocation = !db
    ? { kind: "sqlite", path: child(home, "state.db") }
    : isPostgresUrl(db)
      ? { kind: "postgres", url: db }
      : { kind: "sqlite", path: abs(expandHome(db)) };
  return { home, runsRoot, ledger };
}

/** The SQLite file a location names, for the few things only a SQLite ledger has (exit 78 on PostgreSQL). */
export function sqlitePathOf(location: LedgerLocation, what = "this"): string {
  if (location.kind === "postgres") throw new LedgerUnavailableError(describeLocation(location), `${what} needs a SQLite ledger`);
  return location.path;
}

/** The secret a location's messages must never show: a postgres URL's password (or PGPASSWORD); none for SQLite. */
export function passwordOfLocation(location: LedgerLocation): string | undefined {
  return location.kind === "postgres" ? pgPasswordOfUrl(location.url) : undefined;
}

/** A location safe to print: a postgres URL is named by host, port and database only (postgres/redact.ts). */
export function describeLocation(location: LedgerLocation): string {
  return location.kind === "sqlite" ? location.path : pgLedgerNameOfUrl(location.url);
}
