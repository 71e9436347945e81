// Replaying this host's spool into the ledger (SPEC §17): oldest entry first, each through the guarded
// write and exactly once — the entry id is recorded in the same transaction, so a file that survives
// its own replay (li killed between the commit and the unlink) is only removed the next time.

import type { Tx } from "../ledger/backend.ts";
import type { Ledger } from "../ledger/ledger.ts";
import type { AppliedTransition } from "../ledger/transition.ts";
import { writeFinalRecord, type FinalWrite } from "../legs/teardown/record.ts";
import { writeSessionRows } from "../legs/setup.ts";
import type { Awaitable } from "../util/awaitable.ts";
import type { SpoolEntry } from "./entry.ts";
import { entryPath, listEntryIds, removeEntry, setAside } from "./store.ts";
import { readEntry } from "./validate.ts";

export const REPLAY_ACTOR = "li.replay";

export interface ReplayHooks {
  /** The entry's transaction committed; its file is not removed yet (where a kill -9 is tested). */
  afterCommit?(entryId: string): Awaitable<void>;
}

export interface ReplayOptions {
  spoolDir: string;
  /** At most this many entries per call (a writing command replays a few; the watcher all). */
  limit?: number;
  hooks?: ReplayHooks;
}

export interface ReplayAction {
  entry_id: string;
  session_id: string;
  /** applied: the leg's outcome landed (late_record: replacing a sweep's inference); leg_only: the session had another outcome; already: replayed before. */
  result: "applied" | "late_record" | "leg_only" | "already" | "rejected";
  status: string | null;
}

export interface ReplaySummary {
  replayed: number;
  actions: ReplayAction[];
  /** Entries li would not apply, each moved aside as `<file>.rejected`, with why. */
  refused: { file: string; problem: string }[];
  /** Set when the ledger failed mid-pass: the rest stays spooled for the next pass. */
  error: unknown;
  transitions: AppliedTransition[];
}

/** A spooled setup (the leg never reached the ledger): its session, branch, leg and notice, then its outcome. */
async function writeSpooledSetup(tx: Tx, ledger: Ledger, entry: SpoolEntry): Promise<void> {
  const setup = entry.setup!;
  await writeSessionRows(tx, ledger, setup);
  const reg = setup.registration;
  if (!reg) return;
  const { registerLegCallback } = await import("../notify/register.ts");
  await registerLegCallback(tx, { id: reg.id, sessionId: entry.session_id, legId: entry.leg_id, argv: reg.argv, origin: reg.origin, hostId: reg.hostId, now: reg.createdAt });
}

/** Applies one entry in one transaction; `skipped` when its id is already recorded. */
export function applyEntry(ledger: Ledger, entry: SpoolEntry): Promise<FinalWrite> {
  return writeFinalRecord(ledger, entry.final, {
    actor: REPLAY_ACTOR,
    metadata: { recorded_late: true, spooled_at: entry.spooled_at },
    // The leg's own times: the transition is when the leg ended, not when the ledger came back.
    at: entry.final.endedAt,
    before: async (tx) => {
      if (await tx.spoolReplayed(entry.id)) return false;
      if (entry.setup) await writeSpooledSetup(tx, ledger, entry);
      return true;
    },
    after: async (tx, ctx) => {
      await tx.recordSpoolReplay({ id: entry.id, session_id: entry.session_id, leg_id: entry.leg_id, host_id: entry.host_id, spooled_at: entry.spooled_at, replayed_at: ctx.now() });
    },
  });
}

/**
 * Replays the spool, oldest first. A ledger failure stops the pass (the rest waits for the next); an
 * entry li will not read is set aside once with its reason. Terminal events are emitted after each
 * commit; delivery (never a push) runs the notices, as for any other event.
 */
export async function replaySpool(ledger: Ledger, o: ReplayOptions): Promise<ReplaySummary> {
  const summary: ReplaySummary = { replayed: 0, actions: [], refused: [], error: null, transitions: [] };
  const ids = listEntryIds(o.spoolDir).slice(0, o.limit ?? Infinity);
  for (const id of ids) {
    const file = entryPath(o.spoolDir, id);
    const read = readEntry(file, id);
    if (!read.ok) {
      // Gone already: another li on this host replayed it meanwhile.
      if (read.missing) continue;
      summary.refused.push({ file, problem: read.problem });
      try {
        setAside(o.spoolDir, id);
      } catch {
        // Left where it is; it is refused again next time.
      }
      continue;
    }
    const entry = read.entry;
    let outcome: FinalWrite;
    try {
      outcome = await applyEntry(ledger, entry);
    } catch (error) {
      summary.error = error;
      break;
    }
    await o.hooks?.afterCommit?.(id);
    removeEntry(o.spoolDir, id);
    summary.actions.push(actionOf(entry, outcome));
    if (outcome.result === "applied") {
      summary.replayed++;
      summary.transitions.push(outcome.transition);
      ledger.emitTerminal(outcome.transition);
    }
  }
  return summary;
}

function actionOf(entry: SpoolEntry, outcome: FinalWrite): ReplayAction {
  const base = { entry_id: entry.id, session_id: entry.session_id };
  switch (outcome.result) {
    case "applied":
      return { ...base, result: outcome.replaced ? "late_record" : "applied", status: outcome.transition.status };
    case "skipped":
      return { ...base, result: "already", status: null };
    case "rejected":
      return { ...base, result: "rejected", status: null };
    default:
      return { ...base, result: "leg_only", status: null };
  }
}
