// How a leg's process ended maps to a session status, a reason and li's own exit code (SPEC §8.1), as data.

import { constants } from "node:os";
import type { SessionStatus } from "../lifecycle/policy.ts";
import type { ReasonCode } from "../lifecycle/reasons.ts";

/** Why the command stopped, set once per leg (the first cause wins). */
export type Termination =
  | "exited_ok"
  | "exited_nonzero"
  | "own_signal"
  | "timeout"
  | "sigint"
  | "sigterm"
  | "sighup"
  | "manual_kill"
  | "spawn_failed";

/** §8.1: the in-memory outcome of each way a leg can end. */
export const TERMINATION_OUTCOMES: Readonly<Record<Termination, { status: SessionStatus; reason: ReasonCode }>> = Object.freeze({
  exited_ok: { status: "completed", reason: "run.completed.ok" },
  exited_nonzero: { status: "failed", reason: "run.failed.exit_nonzero" },
  own_signal: { status: "failed", reason: "run.failed.exit_nonzero" },
  timeout: { status: "timed_out", reason: "run.timed_out.deadline" },
  sigint: { status: "aborted", reason: "run.aborted.user" },
  sigterm: { status: "cancelled", reason: "run.cancelled.sigterm" },
  sighup: { status: "cancelled", reason: "run.cancelled.sigterm" },
  manual_kill: { status: "cancelled", reason: "run.cancelled.manual_kill" },
  spawn_failed: { status: "failed", reason: "run.failed.exception" },
});

/** li's own exit code per session status (ADR-0064 D2 EXIT_CODE_BY_STATUS). */
export const EXIT_CODE_BY_STATUS: Readonly<Record<SessionStatus, number>> = Object.freeze({
  // A leg held open by a running linked session (§8.2 step 5) has not succeeded yet.
  running: 1,
  completed: 0,
  completed_empty: 1,
  failed: 1,
  timed_out: 124,
  aborted: 130,
  cancelled: 143,
});

export function liExitCode(status: string): number {
  return EXIT_CODE_BY_STATUS[status as SessionStatus] ?? 1;
}

/** li's exit for a leg it recorded: a command that could not start exits as a shell would (126/127, §16), any other by its status. */
export function legExitCode(termination: Termination, status: string, commandExit: number | null): number {
  return termination === "spawn_failed" && commandExit !== null ? commandExit : liExitCode(status);
}

/** The command's own exit code: its status, or 128+N when signal N ended it; null when it never ran. */
export function commandExitCode(exitCode: number | null, signalCode: string | null): number | null {
  if (exitCode !== null) return exitCode;
  if (signalCode === null) return null;
  const n = (constants.signals as Record<string, number>)[signalCode];
  return n === undefined ? null : 128 + n;
}

/** The termination of a command that exited on its own (no deadline or signal to li first). */
export function naturalTermination(exitCode: number | null, signalCode: string | null): Termination {
  if (exitCode === 0) return "exited_ok";
  if (exitCode !== null) return "exited_nonzero";
  return signalCode !== null ? "own_signal" : "exited_nonzero";
}
