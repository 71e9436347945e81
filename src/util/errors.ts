// Typed errors that carry the exit code the CLI maps them to (SPEC §16).

/** Exit codes li documents (§8.1, §11, §16). */
export const ExitCode = {
  ok: 0,
  failure: 1,
  usage: 2,
  interrupted: 3,
  /** li itself failed (a bug, not the user's input). */
  internal: 70,
  unavailable: 78,
} as const;

/** A problem the user can fix: one line naming the culprit, exit 2 unless said otherwise. */
export class UsageError extends Error {
  override readonly name = "UsageError";
  constructor(
    message: string,
    readonly exitCode: number = ExitCode.usage,
  ) {
    super(message);
  }
}

/** The one answer every command that takes an id gives for an id nothing matches (§16). */
export function unknownIdMessage(input: string): string {
  return `no run, session or branch matches '${input}'`;
}

/** An id nothing matches: exit 2, in the one wording; `flag` names the flag that took it (`-r`). */
export class UnknownIdError extends UsageError {
  constructor(input: string, flag?: string) {
    super(`${flag ? `${flag}: ` : ""}${unknownIdMessage(input)}`);
  }
}

/**
 * The ledger cannot be opened, migrated, read or written, or was written by a newer li (exit 78, §16,
 * §18). `unreachable` is §17's distinction: disk full or busy (worth retrying, later spooling) versus
 * a refusal (read-only, not a li ledger, newer li), which retrying does not change.
 */
export class LedgerUnavailableError extends Error {
  override readonly name = "LedgerUnavailableError";
  readonly exitCode = ExitCode.unavailable;
  readonly unreachable: boolean;
  /** The ledger's own disk is full (§20): unreachable, but not worth waiting for before a command starts. */
  readonly diskFull: boolean;
  constructor(
    readonly path: string,
    readonly reason: string,
    options: { unreachable?: boolean; diskFull?: boolean; cause?: unknown } = {},
  ) {
    super(`ledger ${path}: ${reason}`, options.cause === undefined ? undefined : { cause: options.cause });
    this.unreachable = options.unreachable ?? false;
    this.diskFull = options.diskFull ?? false;
  }
}

/** A lookup by id found nothing. */
export class NotFoundError extends Error {
  override readonly name = "NotFoundError";
  constructor(
    readonly kind: string,
    readonly id: string,
  ) {
    super(`${kind} not found: ${id}`);
  }
}
