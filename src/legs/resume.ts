// `li agent -r` (SPEC §10, ADR-0105): finds the branch, reads its session, and opens the resumed leg in ONE setup transaction.

import type { ArtifactContract } from "../contracts/artifacts.ts";
import type { Tx } from "../ledger/backend.ts";
import type { Awaitable } from "../util/awaitable.ts";
import type { Ledger } from "../ledger/ledger.ts";
import type { LookupKind } from "../ledger/reads.ts";
import { ambiguityMessage, type LookupMatch } from "../ledger/resolve.ts";
import { applyTransition, validateTransition, type TransitionOutcome } from "../ledger/transition.ts";
import { isTerminal, SESSION_TERMINAL_STATUSES } from "../lifecycle/policy.ts";
import { NotFoundError, UnknownIdError, UsageError } from "../util/errors.ts";
import { findBranchSnapshot } from "./rundir.ts";
import { legRow, MARKER_KEYS, nodeMetadata, sessionHostFields, writeNewSession, type AlsoInSetup, type LegPlan } from "./setup.ts";
import { storedObject } from "./stored-json.ts";

/** The override of D1: reopening is the one sanctioned exit from a terminal status, and it is attributed. */
export const RESUME_ACTOR = "cli.resume";
export const RESUME_JUSTIFICATION = "branch resumed by a new leg; the session is executing again";

/**
 * Test seams between the reads of a resume (they run outside any transaction, so another process can
 * remove the session there, as a prune would). Production code passes none.
 */
export interface ResumeHooks {
  afterBranchRead?(branchId: string, sessionId: string | null): Awaitable<void>;
  afterSessionRead?(sessionId: string, found: boolean): Awaitable<void>;
}

/** What a resumed leg starts from. */
export interface ResumeTarget {
  branchId: string;
  /** The branch's session as read before setup; null: none to resume into (the leg starts a new session). */
  sessionId: string | null;
  /** The stored contract and artifact root the resumed leg inherits (§7). */
  contract: ArtifactContract | null;
  artifactRoot: string | null;
  from: "ledger" | "snapshot";
}

/** How the setup transaction opened the leg. */
export type ResumeSetup = "reopened" | "joined" | "created" | "lost_race";

/** This leg's markers merged over the unrelated keys already stored: an older leg's markers are replaced, never merged. */
export function mergedMarkers(stored: unknown, plan: LegPlan): Record<string, unknown> {
  const kept = storedObject(stored);
  for (const key of MARKER_KEYS) delete kept[key];
  return { ...kept, ...nodeMetadata(plan) };
}

function parseContract(stored: unknown): ArtifactContract | null {
  const parsed = storedObject(stored);
  return Array.isArray(parsed.expected) ? (parsed as unknown as ArtifactContract) : null;
}

/** What `-r` takes (§10): a branch id, or a session or run id, which names that session's current branch. */
const RESUME_LOOKUP = ["branch", "session", "run"] as const satisfies readonly LookupKind[];

/** The session's current branch: its newest (a resume continues the branch it has, so that is the one of its current leg). */
async function currentBranchOf(ledger: Ledger, kind: "session" | "run", id: string): Promise<{ id: string; session_id: string } | null> {
  const reads = ledger.backend.reads;
  const sessionId = kind === "session" ? id : await reads.owningSession("run", id);
  if (sessionId === null) return null;
  return (await reads.branchesOf(sessionId)).at(-1) ?? null;
}

/** The branch an id names in the ledger: exact ids first (branch, session, run), then a unique prefix across the three; ambiguity is refused, listing the matches. */
async function ledgerBranch(ledger: Ledger, input: string): Promise<{ id: string; session_id: string } | null> {
  const { backend } = ledger;
  const exact = await backend.getBranch(input);
  if (exact) return exact;
  for (const kind of ["session", "run"] as const) if (await backend.reads.exists(kind, input)) return currentBranchOf(ledger, kind, input);
  const matches: LookupMatch[] = [];
  for (const kind of RESUME_LOOKUP) for (const id of await backend.reads.idsWithPrefix(kind, input, 2)) matches.push({ kind, id });
  if (matches.length > 1) throw new UsageError(`-r: ${ambiguityMessage(input, matches)}`);
  const only = matches[0];
  if (only === undefined) return null;
  return only.kind === "branch" ? backend.getBranch(only.id) : currentBranchOf(ledger, only.kind as "session" | "run", only.id);
}

/**
 * Finds the branch (ledger first, else the run directories' branch snapshots) and reads its session.
 * An unknown branch is a usage error; a branch whose session is gone resumes into a new session.
 */
export async function resolveResume(ledger: Ledger | null, runsRoot: string, idOrPrefix: string, hooks: ResumeHooks = {}): Promise<ResumeTarget> {
  if (idOrPrefix.trim() === "") throw new UsageError("-r: an empty id (give a session or branch id)");
  const branch = ledger ? await ledgerBranch(ledger, idOrPrefix) : null;
  if (!branch) {
    const snapshot = findBranchSnapshot(runsRoot, idOrPrefix);
    if (!snapshot) throw new UnknownIdError(idOrPrefix, "-r");
    await hooks.afterBranchRead?.(snapshot.branchId, null);
    const saved = (typeof snapshot.snapshot === "object" && snapshot.snapshot !== null ? snapshot.snapshot : {}) as Record<string, unknown>;
    return {
      branchId: snapshot.branchId,
      sessionId: null,
      contract: saved.contract && typeof saved.contract === "object" ? (saved.contract as ArtifactContract) : null,
      artifactRoot: typeof saved.artifact_root === "string" ? saved.artifact_root : null,
      from: "snapshot",
    };
  }
  await hooks.afterBranchRead?.(branch.id, branch.session_id);
  const session = await ledger!.backend.getEntity("session", branch.session_id);
  await hooks.afterSessionRead?.(branch.session_id, session !== null);
  if (!session) return { branchId: branch.id, sessionId: null, contract: null, artifactRoot: null, from: "ledger" };
  return {
    branchId: branch.id,
    sessionId: session.id,
    contract: parseContract(session.artifact_contract_json),
    artifactRoot: typeof session.artifacts_path === "string" && session.artifacts_path !== "" ? session.artifacts_path : null,
    from: "ledger",
  };
}

/**
 * The setup transaction of a resumed leg (§8, §10). Under the write lock it reads the session again:
 * - gone → a new session for the same branch (plan.sessionId becomes `freshSessionId()`);
 * - terminal → ONE guarded write reopens it to running (override by cli.resume), clearing ended_at,
 *   exit_code and the verification, installing this leg's markers, current_leg_id and artifact root
 *   (artifacts_path), and inserting the leg row and its registration (alsoInTransaction);
 * - running → left running: a same-status write makes the new leg current with its markers and artifact root;
 * - a lost race → the leg row and registration are still written; the leg proceeds, not current.
 */
export async function setupResume(ledger: Ledger, plan: LegPlan, freshSessionId: () => string, alsoInSetup?: AlsoInSetup): Promise<ResumeSetup> {
  const insertLegAndRegistration = async (tx: Tx) => {
    await tx.insertLeg(legRow(plan, await tx.nextLegSeq(plan.sessionId)));
    await alsoInSetup?.(tx, plan);
  };
  const createInstead = async (tx: Tx): Promise<ResumeSetup> => {
    plan.sessionId = freshSessionId();
    await writeNewSession(tx, ledger, plan, alsoInSetup);
    return "created";
  };
  return ledger.transact(async (tx, ctx) => {
    for (let attempt = 0; attempt < 2; attempt++) {
      const row = await tx.sessionLegState(plan.sessionId);
      if (!row) return createInstead(tx);
      const reopen = isTerminal("session", row.status);
      const validated = validateTransition("session", {
        newStatus: "running",
        ...(reopen
          ? {
              reasonCode: "session.reopened.by_resume",
              reasonSummary: "branch resumed by a new leg",
              expectedStatuses: [...SESSION_TERMINAL_STATUSES],
              override: true,
              overrideActor: RESUME_ACTOR,
              overrideJustification: RESUME_JUSTIFICATION,
            }
          : { reasonCode: "run.started.ok", reasonSummary: `leg ${plan.runId} resumes the branch while another leg runs`, expectedStatuses: ["running"] }),
        source: "executor",
        actor: "li agent",
        metadata: { leg_id: plan.legId, run_id: plan.runId, ...(plan.invocationId !== null ? { invocation_id: plan.invocationId } : {}) },
        extraFields: {
          ...(reopen ? { ended_at: null, exit_code: null, artifact_verification_json: null } : {}),
          node_metadata: mergedMarkers(row.node_metadata, plan),
          current_leg_id: plan.legId,
          ...sessionHostFields({ host_id: plan.supervisor.hostId, host_name: plan.supervisor.hostName }),
          // §2, §6: the session row describes its current leg, so a `--save-dir` given with `-r` becomes the
          // session's artifact root here, in the same write (and the next plain resume inherits it, §7).
          artifacts_path: plan.run.artifactRoot,
        },
        alsoInTransaction: async (t) => {
          await insertLegAndRegistration(t);
          // §10: --invocation re-links the session. invocation_id is not a status column, so this plain
          // write in the same transaction is not a second status write; it lands only when the reopen did.
          if (plan.invocationId !== null) await t.relinkInvocation(plan.sessionId, plan.invocationId);
        },
      });
      let outcome: TransitionOutcome;
      try {
        outcome = await applyTransition(tx, ctx, validated, plan.sessionId);
      } catch (error) {
        // Removed between our read and the write (a backend with row locks only): nothing to resume into.
        if (error instanceof NotFoundError) return createInstead(tx);
        throw error;
      }
      if (outcome.result === "applied") return reopen ? "reopened" : "joined";
      if (outcome.result === "rejected") throw outcome.error;
    }
    // Lost the race twice: the bookkeeping lost, the leg does not (ADR-0105 D1).
    await insertLegAndRegistration(tx);
    return "lost_race";
  });
}
