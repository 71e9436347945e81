// A leg's final record as data (§8.2 step 9, §17): what the teardown writes, what the spool keeps when
// the ledger is unreachable, and what a replay applies — one write for all three, through §5.

import type { Tx } from "../../ledger/backend.ts";
import { NO_ARTIFACT_ROOT, type MessageRow, type SessionLegState } from "../../ledger/rows.ts";
import type { Ledger } from "../../ledger/ledger.ts";
import { applyTransition, validateTransition, type AppliedTransition, type TransitionContext, type TransitionRejectedError } from "../../ledger/transition.ts";
import { isTerminal } from "../../lifecycle/policy.ts";
import { isInferredReason } from "../../lifecycle/reasons.ts";
import { storedObject } from "../stored-json.ts";
import type { LegUsage } from "../leftovers.ts";

/** The final guarded write's inputs, plain JSON (a spool entry holds exactly this). */
export interface FinalRecord {
  sessionId: string;
  legId: string;
  /** The session status the leg computed; `running` for a leg held open by its linked session. */
  status: string;
  reasonCode: string;
  reasonSummary: string | null;
  evidence: Record<string, unknown>[];
  metadata: Record<string, unknown>;
  endedAt: number;
  exitCode: number | null;
  verification: unknown;
  /** The leg's markers (§8.5), merged over the stored ones at the write. */
  nodeMetadata: Record<string, unknown>;
  message: MessageRow | null;
  /**
   * The leg row's own outcome (a leg held open by its linked session still failed itself), and what it used
   * (§8.7); `artifactRootGone`: its artifact root was inside a run directory that could not be written and was removed.
   */
  leg: { status: string; reasonCode: string; artifactRootGone?: true; usage?: LegUsage };
}

export const LATE_RECORD_ACTOR = "li.late_record";

export interface FinalWriteOptions {
  /** Who writes: `li agent` live, `li.replay` from the spool. */
  actor: string;
  /** Merged into the transition's metadata (a replay's `recorded_late`, `spooled_at`). */
  metadata?: Record<string, unknown>;
  /** The transition's time; default the ledger's clock (a replay keeps the leg's own end). */
  at?: number;
  /** Inside the same transaction, before the write: false stops it (a spool entry already replayed). */
  before?: (tx: Tx) => Promise<boolean>;
  /** Inside the same transaction, after the write (recording a spool entry as replayed). */
  after?: (tx: Tx, ctx: TransitionContext) => Promise<void>;
  /** The longest this attempt waits for another process's lock (a retry bounded by --ledger-retry, §17). */
  lockWaitMs?: number;
  /** The longest this whole attempt may take, connecting included (what is left of --ledger-retry, §17). */
  withinMs?: number;
}

export type FinalWrite =
  | { result: "applied"; transition: AppliedTransition; replaced: { status: string; reasonCode: string | null } | null }
  /** Only the leg's row was closed: the session is gone, another leg is current, or another writer's terminal status stands. */
  | { result: "leg_only"; why: "gone" | "not_current" | "terminal" | "conflict" }
  | { result: "rejected"; error: TransitionRejectedError }
  /** `before` refused: nothing written. */
  | { result: "skipped" };

/**
 * Closes this leg's row (and stores its message); `force` also rewrites a row a sweep closed with its
 * inference. `again`: the row may already hold this very record — a retry whose first attempt committed
 * but never heard so (a PostgreSQL connection lost at COMMIT, §17) — so its message is not stored twice.
 */
async function closeLeg(tx: Tx, r: FinalRecord, opts: { force?: boolean; again?: boolean } = {}): Promise<void> {
  const stored = r.message !== null && opts.again === true && (await tx.getLeg(r.legId))?.last_msg_id === r.message.id;
  if (r.message && !stored) await tx.insertMessage(r.message);
  await tx.updateLeg(
    r.legId,
    {
      ended_at: r.endedAt,
      status: r.leg.status,
      reason_code: r.leg.reasonCode,
      exit_code: r.exitCode,
      ...(r.leg.artifactRootGone ? { artifact_root: NO_ARTIFACT_ROOT } : {}),
      ...(r.leg.usage ?? {}),
      ...(r.message ? { first_msg_id: r.message.id, last_msg_id: r.message.id } : {}),
    },
    opts.force ? {} : { onlyOpen: true },
  );
}

/**
 * §17: the session is terminal by a sweep's inference about THIS leg — its reason is one of the
 * inferred ones and the sweep closed this leg's row with it. A person's verdict (`li state set-status`
 * closes no leg; `li kill` writes no inferred reason) or another leg's never qualifies.
 */
function inferredAboutThisLeg(row: SessionLegState, leg: { ended_at: number | null; reason_code: string | null } | null): boolean {
  return isInferredReason(row.status_reason_code) && leg !== null && leg.ended_at !== null && leg.reason_code === row.status_reason_code;
}

/**
 * The one final write, in one transaction: the guarded write of the leg's outcome with its leg row
 * when the session still runs with this leg current; an audited override (actor `li.late_record`)
 * when a sweep's inference about this leg stands (§17); otherwise only the leg's row.
 */
export async function writeFinalRecord(ledger: Ledger, r: FinalRecord, o: FinalWriteOptions): Promise<FinalWrite> {
  return ledger.transact(async (tx, ledgerCtx) => {
    if (o.before && !(await o.before(tx))) return { result: "skipped" } as const;
    const ctx: TransitionContext = o.at === undefined ? ledgerCtx : { ...ledgerCtx, now: () => o.at! };
    const outcome = await writeInTransaction(tx, ctx, r, o);
    await o.after?.(tx, ledgerCtx);
    return outcome;
  }, {
    ...(o.lockWaitMs === undefined ? {} : { lockWaitMs: o.lockWaitMs }),
    ...(o.withinMs === undefined ? {} : { withinMs: o.withinMs }),
  });
}

async function writeInTransaction(tx: Tx, ctx: TransitionContext, r: FinalRecord, o: FinalWriteOptions): Promise<FinalWrite> {
  const row = await tx.sessionLegState(r.sessionId);
  if (!row) {
    await closeLeg(tx, r, { again: true });
    return { result: "leg_only", why: "gone" };
  }
  // Checked under the write lock: a resume may have taken over since the leg last looked.
  if (row.current_leg_id !== r.legId) {
    await closeLeg(tx, r, { again: true });
    return { result: "leg_only", why: "not_current" };
  }
  const ended = r.status !== "running";
  let late: { status: string; reasonCode: string | null } | null = null;
  if (isTerminal("session", row.status)) {
    if (!ended || !inferredAboutThisLeg(row, await tx.getLeg(r.legId))) {
      await closeLeg(tx, r, { again: true });
      return { result: "leg_only", why: "terminal" };
    }
    late = { status: row.status, reasonCode: row.status_reason_code };
  }
  const replacing = late !== null && late.status !== r.status;
  const validated = validateTransition("session", {
    newStatus: r.status,
    reasonCode: r.reasonCode,
    ...(r.reasonSummary !== null ? { reasonSummary: r.reasonSummary } : {}),
    evidenceRefs: r.evidence,
    source: "executor",
    actor: late ? LATE_RECORD_ACTOR : o.actor,
    metadata: { leg_id: r.legId, ...r.metadata, ...o.metadata, ...(late ? { late_record: { replaced_status: late.status, replaced_reason: late.reasonCode } } : {}) },
    expectedStatuses: [row.status],
    extraFields: {
      // A running row carries no end (a leg held open by its linked session).
      ...(ended ? { ended_at: r.endedAt, exit_code: r.exitCode } : {}),
      artifact_verification_json: r.verification ?? null,
      node_metadata: { ...storedObject(row.node_metadata), ...r.nodeMetadata },
      // The session's message endpoints: its first message stays the first leg's; the last is this leg's.
      ...(r.message ? { first_msg_id: row.first_msg_id ?? r.message.id, last_msg_id: r.message.id } : {}),
    },
    ...(late
      ? {
          override: true,
          overrideActor: LATE_RECORD_ACTOR,
          overrideJustification: `the leg's own record replaces the sweep's inference ${late.status} (${late.reasonCode})`,
        }
      : {}),
    alsoInTransaction: async (t, transition) => {
      await closeLeg(t, r, { force: late !== null });
      // The leg's notice is owed the first terminal event of its session: the late record becomes it (§17).
      if (replacing) await owedFrom(t, r.legId, transition.seq - 1, ctx.now());
    },
  });
  const applied = await applyTransition(tx, ctx, validated, r.sessionId);
  if (applied.result === "applied") return { result: "applied", transition: applied.transition, replaced: late };
  await closeLeg(tx, r);
  if (applied.result === "rejected") return { result: "rejected", error: applied.error };
  return { result: "leg_only", why: "conflict" };
}

/**
 * Moves the watermark of this leg's registrations to just below the late record's event, so that event
 * is the first one they are owed (one leg, one notice: the sweep's inference, if not delivered yet, is
 * not delivered any more).
 */
async function owedFrom(tx: Tx, legId: string, watermark: number, now: number): Promise<void> {
  const registrations = (await tx.notify.listCallbacks({ scope: "leg" })).filter((c) => c.leg_id === legId);
  for (const c of registrations) {
    await tx.notify.releaseConsumer(c.consumer);
    await tx.notify.retireConsumer(c.consumer, now);
    await tx.notify.reactivateConsumer(c.consumer, watermark, now);
  }
}
