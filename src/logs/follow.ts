// `li logs -f`: follows a session's live leg — new output as it is written, the next leg when a resume
// starts one — until the session is terminal. Wakes on a change of the stream file or of the ledger (the
// same wake-up module as `li wait`), with the safety poll behind both. A service: output goes to `sink`.

import type { BranchRow, EntityRow, LegRow } from "../ledger/rows.ts";
import type { LedgerReads } from "../ledger/reads.ts";
import type { ChangeWake } from "../ledger/wake.ts";
import { isTerminal } from "../lifecycle/policy.ts";
import { LedgerUnavailableError } from "../util/errors.ts";
import { streamFiles } from "./locate.ts";
import { LogFileError, StreamReader } from "./read.ts";
import { startUpDone } from "../util/jit.ts";

export interface FollowOptions {
  reads: LedgerReads;
  sessionId: string;
  branches: readonly BranchRow[];
  /** The leg to follow first, and its reader when its file is already open (positioned by the caller). */
  leg: LegRow;
  reader: StreamReader | null;
  sink: (bytes: Uint8Array) => void;
  /** Called when a resume starts a new leg, before its output. */
  onLeg: (leg: LegRow) => void;
  /** A file that cannot be read (a symlink put in its place): said once, then ignored. */
  onProblem: (message: string) => void;
  /** Wakes on ledger commits. */
  armLedger: () => ChangeWake | Promise<ChangeWake>;
  /** Wakes on changes to these files of one directory. */
  armFiles: (dir: string, names: readonly string[]) => ChangeWake;
  intervalMs: number;
  signal: AbortSignal;
}

export type FollowEnd = "done" | "interrupted";

/** Follows until the session is terminal (or gone: `done` too, the caller reads its state) or the signal aborts. */
export async function followSession(o: FollowOptions): Promise<FollowEnd> {
  startUpDone(); // -f streams until the leg ends
  let leg = o.leg;
  let reader = o.reader;
  const refused = new Set<string>();
  const aborted = new Promise<void>((resolve) => {
    if (o.signal.aborted) resolve();
    o.signal.addEventListener("abort", () => resolve(), { once: true });
  });
  const armFor = (l: LegRow) => {
    const files = streamFiles(l, o.branches);
    return o.armFiles(`${l.state_root}/stream`, files.map((f) => f.slice(f.lastIndexOf("/") + 1)));
  };
  /** The leg's file once it exists: the leg creates it when its command starts. */
  const tryOpen = (l: LegRow): StreamReader | null => {
    for (const file of streamFiles(l, o.branches)) {
      if (refused.has(file)) continue;
      try {
        return StreamReader.open(file);
      } catch (error) {
        if (!(error instanceof LogFileError)) throw error;
        if (!error.missing) {
          refused.add(file);
          o.onProblem(error.message);
        }
      }
    }
    return null;
  };
  const ledgerWake = await o.armLedger();
  let fileWake = armFor(leg);
  let outage = false;
  try {
    for (;;) {
      const seenLedger = ledgerWake.generation;
      const seenFile = fileWake.generation;
      reader ??= tryOpen(leg);
      reader?.drain(o.sink);
      // undefined: the ledger did not answer this time.
      let row: EntityRow | null | undefined;
      let next: LegRow | undefined;
      try {
        row = await o.reads.entityRow("session", o.sessionId);
        const currentLegId = typeof row?.current_leg_id === "string" ? row.current_leg_id : null;
        if (row && !isTerminal("session", row.status) && currentLegId !== null && currentLegId !== leg.id) {
          next = (await o.reads.legsOf(o.sessionId)).find((l) => l.id === currentLegId);
        }
        outage = false;
      } catch (error) {
        // A ledger that stopped answering (a server restarting) is waited for: the stream file still wakes us.
        if (!(error instanceof LedgerUnavailableError) || !error.unreachable) throw error;
        if (!outage) o.onProblem(`${error.message}; still following (looking again when it answers)`);
        outage = true;
        row = undefined;
      }
      if (row === null || (row && isTerminal("session", row.status))) {
        // The leg closes its stream before its final write: what is there now is all there is.
        reader?.drain(o.sink);
        return "done";
      }
      if (next) {
        reader?.drain(o.sink);
        reader?.close();
        reader = null;
        leg = next;
        o.onLeg(leg);
        fileWake.close();
        fileWake = armFor(leg);
        continue;
      }
      if (o.signal.aborted) return "interrupted";
      await Promise.race([ledgerWake.changed(seenLedger, o.intervalMs), fileWake.changed(seenFile, o.intervalMs), aborted]);
      if (o.signal.aborted) return "interrupted";
    }
  } finally {
    reader?.close();
    ledgerWake.close();
    fileWake.close();
  }
}
