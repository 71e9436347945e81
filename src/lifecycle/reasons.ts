// The closed reason-code vocabulary (SPEC §4): `<domain>.<status_or_outcome>.<cause>`, declared once.

import { POLICIES, type EntityKind } from "./policy.ts";

/** Every registered code with a one-line meaning; `li reasons` prints this table. */
export const REASONS = {
  "legacy.imported": "imported from an older ledger; accepted for every entity",

  "run.started.ok": "the leg started",
  "run.completed.ok": "the command exited 0 and every check passed",
  "run.completed_empty.no_evidence": "clean exit, but no artifact, response, commit or dirty tree",
  "run.failed.exit_nonzero": "the command exited non-zero or was killed by a signal of its own",
  "run.failed.exception": "li failed to run the command (spawn error, internal error)",
  "run.failed.missing_artifact": "a required artifact was not produced",
  "run.failed.escalated": "the command escalated through LI_ESCALATE_FILE",
  "run.failed.orphaned_parent": "the parent execution went away",
  "run.failed.spawn_identity_lost": "the spawned process could not be identified",
  "run.failed.provider_retryable": "a provider failure that may succeed on retry",
  "run.failed.provider_nonretryable": "a provider failure that will not succeed on retry",
  "run.timed_out.deadline": "the --timeout deadline passed",
  "run.aborted.user": "interrupted with SIGINT (Ctrl-C)",
  "run.cancelled.sigint": "cancelled by SIGINT",
  "run.cancelled.sigterm": "li received SIGTERM or SIGHUP",
  "run.cancelled.system": "cancelled by the system",
  "run.cancelled.manual_kill": "cancelled by li kill",
  "run.cancelled.force_kill": "li kill had to SIGKILL the leg",
  "run.cancelled.stale_auto": "cancelled by li kill --all-stale: supervisor dead, leg stale",
  "run.cancelled.operator": "cancelled by an operator",
  "run.queued.lease_expired": "its lease expired (the host or leg holding it stopped renewing it): queued again",
  "run.failed.lease_attempts_exhausted": "its lease expired as many times as the queue's lease_attempts allow",

  "session.phantom.process_dead": "the reaper found the leg's supervisor dead",
  "session.stale.no_heartbeat": "li state doctor found the leg stale with its supervisor dead",
  "session.orphaned.no_process": "running with no process markers past the phantom threshold",
  "session.reopened.by_resume": "a resumed leg reopened the session",
  "session.linked.finalized": "finalized with the outcome of its linked session",
  "session.running.linked_pending": "held running by li agent while its linked session still runs",

  "schedule.queued.created": "the schedule run was queued",
  "schedule.queued.requeued": "the schedule run was queued again",
  "schedule.queued.dependencies_met": "every run it waited for (--after) succeeded",
  "schedule.queued.retry": "a new attempt of a failed run, queued once its retry delay passed",
  "schedule.fired.due": "the schedule fired because it was due",
  "schedule.running.started": "the schedule run started",
  "schedule.running.leased": "a host leased the run and starts its leg",
  "schedule.waiting_dependency.blocked": "waiting for a dependency",
  "schedule.retry_wait.backoff": "waiting before a retry",
  "schedule.skipped.precondition": "skipped: a precondition did not hold",
  "schedule.skipped.missed_fire": "a cron schedule's due time passed while no watcher could fire it (--missed skip)",
  "schedule.skipped.overlap": "a cron schedule fell due while its previous run was still active (--overlap skip)",
  "schedule.cancelled.operator": "cancelled by an operator",

  "play.pending.created": "the play was created",
  "play.pending.reset": "the play was reset to pending",
  "play.prepared.ok": "the play was prepared",
  "play.running.started": "the play started",
  "play.running_complete.ok": "the play's run finished; gates pending",
  "play.gated.awaiting_gate": "waiting at a gate",
  "play.gate_failed.checks": "a gate's checks failed",
  "play.redoing.requested": "a redo was requested",
  "play.merged.ok": "the play merged",
  "play.escalated.operator": "escalated to an operator",
  "play.blocked.runner_orphaned": "the play's runner went away",
  "play.aborted_after_finish.operator": "aborted after its run finished",

  "show.active.created": "the show was created",
  "show.imported.created": "the show was imported",
  "show.completed.final_gate": "the show passed its final gate",
  "show.aborted.operator": "aborted by an operator",

  "team.active.created": "the team was created",
  "team.archived.operator": "archived by an operator",
} as const satisfies Record<string, string>;

export type ReasonCode = keyof typeof REASONS;

export const LEGACY_REASON = "legacy.imported" satisfies ReasonCode;

const REASON_SHAPE = /^[a-z][a-z_]*\.[a-z][a-z_]*\.[a-z][a-z_]*$/;

export function isRegisteredReason(code: string): code is ReasonCode {
  return Object.hasOwn(REASONS, code);
}

export function reasonDomain(code: string): string {
  return code.slice(0, code.indexOf("."));
}

/** Why a code is refused for a kind, or null when it is accepted. */
export function reasonRefusal(kind: EntityKind, code: string): string | null {
  if (!isRegisteredReason(code)) return `unknown reason code '${code}' (see li reasons)`;
  if (code === LEGACY_REASON) return null;
  const domains = POLICIES[kind].reasonDomains;
  if (!domains.includes(reasonDomain(code))) {
    return `reason code '${code}' is not accepted for ${kind} (accepted domains: ${domains.join(", ")})`;
  }
  return null;
}

/** The reason a new row of `kind` carries when created in `status` without an explicit code. */
export const INITIAL_REASONS: Readonly<Record<EntityKind, Readonly<Record<string, ReasonCode>>>> = Object.freeze({
  session: { running: "run.started.ok" },
  invocation: { running: "run.started.ok" },
  schedule_run: {
    queued: "schedule.queued.created",
    running: "schedule.fired.due",
    failed: "run.failed.exception",
    skipped: "schedule.skipped.precondition",
  },
  play: { pending: "play.pending.created" },
  show: { active: "show.active.created", imported: "show.imported.created" },
  team: { active: "team.active.created" },
});

/**
 * What is wrong with the vocabulary as declared: a malformed code, or an initial status without a valid
 * default reason. A test keeps this empty (the data is constant, so checking it at every start-up
 * would only cost start-up time).
 */
export function vocabularyProblems(): string[] {
  const problems: string[] = [];
  for (const code of Object.keys(REASONS)) {
    if (code !== LEGACY_REASON && !REASON_SHAPE.test(code)) problems.push(`reason code '${code}' is malformed`);
  }
  for (const [kind, byStatus] of Object.entries(INITIAL_REASONS) as [EntityKind, Record<string, string>][]) {
    for (const status of POLICIES[kind].initial) {
      const code = byStatus[status];
      if (!code || reasonRefusal(kind, code)) problems.push(`${kind}: no valid initial reason for '${status}'`);
    }
  }
  return problems;
}

/**
 * Reasons a sweep writes from inference (reaper, doctor, `kill --all-stale`), never from a leg's own
 * record (§17): a late record of the leg itself replaces them. A code ending in `.` covers its whole
 * `<domain>.<status>.` family.
 */
export const INFERRED_REASONS = ["session.phantom.", "session.stale.", "session.orphaned.", "run.cancelled.stale_auto"] as const;

/** Whether `code` is a sweep's inference that a leg's own late record may replace (§17). */
export function isInferredReason(code: string | null | undefined): boolean {
  if (!code) return false;
  return INFERRED_REASONS.some((r) => (r.endsWith(".") ? code.startsWith(r) : code === r));
}
