// Id rules of SPEC §3: random UUIDs for ids people type, a safe pattern for ids supplied from outside.

import { UsageError } from "./errors.ts";

/** An externally supplied id or run id: one safe path component. */
export const SAFE_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]*$/;

export function isSafeId(value: string): boolean {
  return value !== "." && value !== ".." && SAFE_ID_PATTERN.test(value);
}

/** Throws a UsageError naming `what` (a flag or a field) when `value` is not a safe id. */
export function assertSafeId(value: string, what: string): string {
  if (!isSafeId(value)) {
    throw new UsageError(`${what}: ${JSON.stringify(value)} is not a valid id (letters, digits, '.', '_', ':', '-'; not starting with a punctuation mark)`);
  }
  return value;
}

export type IdFactory = () => string;

/** The default id factory: a random v4 UUID, so an 8-character prefix is almost always unique. */
export const randomId: IdFactory = () => crypto.randomUUID();
