// Whether a ledger has been created yet, without creating it: for a command that would create one but
// must first refuse input that only an existing ledger could make valid (§16: a refused command leaves
// nothing behind).

import { UsageError } from "../util/errors.ts";
import type { Paths } from "./location.ts";
import { openReads } from "./open-reads.ts";

/**
 * SQLite: the file exists. PostgreSQL: li's schema answers (a missing one is "nothing recorded yet").
 * A ledger that cannot be reached counts as existing: the command's own open then reports why.
 */
export async function ledgerExists(paths: Paths): Promise<boolean> {
  if (paths.ledger.kind === "sqlite") return (require("node:fs") as typeof import("node:fs")).existsSync(paths.ledger.path);
  let opened: ReturnType<typeof openReads> | null = null;
  try {
    opened = openReads(paths);
    await opened.reads.changeCounter();
    return true;
  } catch (error) {
    return !(error instanceof UsageError);
  } finally {
    opened?.close();
  }
}
