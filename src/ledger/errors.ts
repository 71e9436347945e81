// Errors of the guarded write, in a module light enough for every command's error mapping.

import type { EntityKind } from "../lifecycle/policy.ts";
import { UsageError } from "../util/errors.ts";

/** Refused before any write: bad kind, status, reason, source, field or override. */
export class TransitionValidationError extends UsageError {}

/** Leaving a terminal status, or moving along an undeclared edge, without an override (audited). */
export class TransitionRejectedError extends Error {
  override readonly name = "TransitionRejectedError";
  constructor(
    readonly kind: EntityKind,
    readonly id: string,
    readonly from: string | null,
    readonly to: string,
    readonly why: "terminal_exit" | "undeclared_edge",
  ) {
    super(
      why === "terminal_exit"
        ? `refusing to move ${kind} ${id} from terminal status '${from}' to '${to}' without --override`
        : `refusing to move ${kind} ${id} from '${from}' to '${to}': not a declared edge (needs --override)`,
    );
  }
}
