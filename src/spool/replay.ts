// Replaying this host's spool into the ledger (SPEC §17): oldest entry first, each through the guarded
// write and exactly once — the entry id is recorded in the same transaction, so a file that survives
// its own replay (li killed between the commit and the unlink) is only removed the next time.

import { hostId, machineId, probeProcess, type ProbeResult } from "../host/proc.ts";
import type { Tx } from "../ledger/backend.ts";
import { ledgerFailureOf } from "../ledger/failures.ts";
import type { Ledger } from "../ledger/ledger.ts";
import type { LegRow } from "../ledger/rows.ts";
import type { AppliedTransition } from "../ledger/transition.ts";
import { LedgerUnavailableError } from "../util/errors.ts";
import { writeFinalRecord, type FinalWrite } from "../legs/teardown/record.ts";
import { writeSessionRows } from "../legs/setup.ts";
import type { Awaitable } from "../util/awaitable.ts";
import type { SpoolEntry } from "./entry.ts";
import { entryPath, listEntryIds, removeEntry, setAside } from "./store.ts";
import { spoolKey } from "./mac.ts";
import { readEntry } from "./validate.ts";

export const REPLAY_ACTOR = "li.replay";

export interface ReplayHooks {
  /** The entry's transaction committed; its file is not removed yet (where a kill -9 is tested). */
  afterCommit?(entryId: string): Awaitable<void>;
}

/** Who replays, as replay judges entries and legs (§18); injectable for tests. */
export interface ReplayIdentity {
  uid: number;
  /** This host's machine id (entries of other machines are refused). */
  machine: string;
  /** This host and boot (`hostId()`): a recorded supervisor is only probed here. */
  hostId: string;
  probe(pid: number, startTicks: number | null): ProbeResult;
}

function thisProcess(): ReplayIdentity {
  return { uid: process.getuid?.() ?? 0, machine: machineId(), hostId: hostId(), probe: (pid, ticks) => probeProcess(pid, ticks) };
}

export interface ReplayOptions {
  spoolDir: string;
  identity?: ReplayIdentity;
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
  /** Entries li would not apply, each moved aside as `<file>.rejected`, with why (never the file's text). */
  refused: { file: string; problem: string }[];
  /** Entries kept for a later pass: their leg's supervisor is alive, so the outcome is not yet the leg's last word. */
  waiting: { file: string; leg_id: string }[];
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
  const summary: ReplaySummary = { replayed: 0, actions: [], refused: [], waiting: [], error: null, transitions: [] };
  const ids = listEntryIds(o.spoolDir).slice(0, o.limit ?? Infinity);
  if (ids.length === 0) return summary;
  const identity = o.identity ?? thisProcess();
  const key = spoolKey(o.spoolDir, { create: false });
  const trust = { uid: identity.uid, machine: identity.machine, key: key.ok ? key.key : null };
  const refuse = (id: string, file: string, problem: string) => {
    summary.refused.push({ file, problem });
    try {
      setAside(o.spoolDir, id);
    } catch {
      // Left where it is; it is refused again next time.
    }
  };
  for (const id of ids) {
    const file = entryPath(o.spoolDir, id);
    const read = readEntry(file, id, trust);
    if (!read.ok) {
      // Gone already: another li on this host replayed it meanwhile.
      if (!read.missing) refuse(id, file, read.problem);
      continue;
    }
    const entry = read.entry;
    let outcome: FinalWrite;
    try {
      // A leg whose supervisor still runs has the last word itself: its entry waits (§18).
      if (await supervisorAlive(ledger, entry, identity)) {
        summary.waiting.push({ file, leg_id: entry.leg_id });
        continue;
      }
      outcome = await applyEntry(ledger, entry);
    } catch (error) {
      // The ledger is away: the rest waits for the next pass. Anything else is this entry's fault, and
      // must not hold back the entries after it: set aside, named by its kind, never by its text.
      if (isLedgerFailure(error)) {
        summary.error = error;
        break;
      }
      refuse(id, file, `was refused by the ledger's checks (${error instanceof Error ? error.name : "an invalid outcome"})`);
      continue;
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

/** The leg's supervisor (as the ledger records it, else as the entry's own setup does) is alive on this host and boot. */
async function supervisorAlive(ledger: Ledger, entry: SpoolEntry, identity: ReplayIdentity): Promise<boolean> {
  const recorded: Pick<LegRow, "pid" | "pid_start_ticks" | "host_id" | "ended_at"> | null = (await ledger.backend.getLeg(entry.leg_id)) ?? entry.setup?.leg ?? null;
  if (recorded === null || recorded.ended_at !== null || recorded.pid === null || recorded.host_id !== identity.hostId) return false;
  // Never ourselves: the replaying process is no leg's supervisor.
  if (recorded.pid === process.pid) return false;
  return identity.probe(recorded.pid, recorded.pid_start_ticks) === "alive";
}

function isLedgerFailure(error: unknown): boolean {
  return error instanceof LedgerUnavailableError || ledgerFailureOf(error, "the ledger") !== null;
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
