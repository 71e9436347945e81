// Id rules of SPEC §3: random UUIDs for ids people type, a safe pattern for ids supplied from outside.

import { UsageError } from "./errors.ts";

/** An externally supplied id or run id: one safe path component. */
export const SAFE_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]*$/;

/**
 * The longest id li accepts (§18): well inside a file name's 255 bytes, so a run id always makes a run
 * directory, and short enough for one line of output. UUIDs and generated run ids are 36 and 22.
 */
export const MAX_ID_LENGTH = 128;

export function isSafeId(value: string): boolean {
  return value.length <= MAX_ID_LENGTH && value !== "." && value !== ".." && SAFE_ID_PATTERN.test(value);
}

/** Throws a UsageError naming `what` (a flag or a field) when `value` is not a safe id; the message quotes at most 40 characters of it. */
export function assertSafeId(value: string, what: string): string {
  if (value.length > MAX_ID_LENGTH) {
    throw new UsageError(`${what}: an id of ${value.length} characters is too long (at most ${MAX_ID_LENGTH})`);
  }
  if (!isSafeId(value)) {
    const shown = value.length > 40 ? `${JSON.stringify(value.slice(0, 40))}…` : JSON.stringify(value);
    throw new UsageError(`${what}: ${shown} is not a valid id (letters, digits, '.', '_', ':', '-'; not starting with a punctuation mark)`);
  }
  return value;
}

export type IdFactory = () => string;

/** The default id factory: a random v4 UUID, so an 8-character prefix is almost always unique. */
export const randomId: IdFactory = () => crypto.randomUUID();
