// After a command that writes (SPEC §17): outcomes spooled on this host while the ledger was away are
// replayed through the ledger the command just used, so they land without waiting for `li watch`.

import type { Ledger } from "../ledger/ledger.ts";
import { spoolDirOf } from "../spool/entry.ts";
import type { ReplayAction } from "../spool/replay.ts";
import { writeNote } from "./io.ts";
import { cliPaths } from "./paths.ts";

/** The replay results that wrote the entry's outcome into the ledger (spool/replay.ts ReplayAction). */
const APPLIED: ReadonlySet<ReplayAction["result"]> = new Set(["applied", "late_record", "leg_only"]);

/** A command replays at most this many entries; the watcher takes the rest. */
const REPLAY_LIMIT = 100;

/** Replays this host's spool, if anything waits there; never fails the command (one warning instead). */
export async function replayAfterWrite(ledger: Ledger): Promise<void> {
  const dir = spoolDirOf(cliPaths().home);
  const { listEntryIds } = await import("../spool/store.ts");
  let waiting: string[];
  try {
    waiting = listEntryIds(dir);
  } catch (error) {
    writeNote(`warning: cannot read the spool ${dir}: ${error instanceof Error ? error.message : String(error)}`);
    return;
  }
  if (waiting.length === 0) return;
  try {
    const { replaySpool } = await import("../spool/replay.ts");
    const summary = await replaySpool(ledger, { spoolDir: dir, limit: REPLAY_LIMIT });
    for (const r of summary.refused) writeNote(`warning: spool entry ${r.file} ${r.problem}; set aside as ${r.file}.rejected`);
    // What this command applied: an entry another process had recorded already was only removed.
    const applied = summary.actions.filter((a) => APPLIED.has(a.result)).length;
    if (applied > 0) writeNote(`recorded ${applied} spooled outcome${applied === 1 ? "" : "s"} from ${dir}`);
    if (summary.error) writeNote(`warning: spooled outcomes in ${dir} wait for the next replay: ${summary.error instanceof Error ? summary.error.message : String(summary.error)}`);
  } catch (error) {
    writeNote(`warning: spooled outcomes in ${dir} not replayed: ${error instanceof Error ? error.message : String(error)}`);
  }
}
