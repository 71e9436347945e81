// Opens a ledger for reading only, without the write machinery: `li wait`'s cold path.

import type { Paths } from "./location.ts";
import type { OpenedReads } from "./reads.ts";
import type { Patience } from "./patience.ts";
import { openSqliteForReads } from "./sqlite/open-read.ts";
import { SqliteReads } from "./sqlite/reads.ts";
import { hostClock } from "../util/host-clock.ts";

/**
 * A missing ledger is a UsageError ("nothing recorded yet", exit 2) and is never created (§16).
 * `patience`: how long a PostgreSQL server that does not answer is waited for (patience.ts).
 */
export function openReads(paths: Paths, patience?: Patience): OpenedReads {
  if (paths.ledger.kind === "postgres") {
    // Loaded only for a postgres:// location, so SQLite's cold path pays nothing for it.
    const { openPgReads } = require("./postgres/open-reads.ts") as typeof import("./postgres/open-reads.ts");
    return openPgReads(paths.ledger.url, patience, paths.home);
  }
  const path = paths.ledger.path;
  const db = openSqliteForReads(path);
  return {
    reads: new SqliteReads(db),
    wake: async (options) => (await import("./sqlite/wake.ts")).watchSqliteFile(path, options),
    now: hostClock,
    ready: async () => {},
    close: () => db.close(),
  };
}
