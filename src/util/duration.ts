// Parsing and formatting of DURATION values and other numeric flag values (SPEC §8.1).

import { UsageError } from "./errors.ts";

/** Seconds per unit. A bare number is seconds. */
const UNIT_SECONDS = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86400 } as const;

type DurationUnit = keyof typeof UNIT_SECONDS;

const UNITS = Object.keys(UNIT_SECONDS) as DurationUnit[];

/** A plain decimal: no sign, no exponent, no hex, so `Number()`'s laxness ("", "0x10", "1e3") never leaks in. */
const DECIMAL = String.raw`(?:\d+(?:\.\d+)?|\.\d+)`;
// Longest unit first so "ms" is not read as "m" followed by garbage.
const DURATION_PATTERN = new RegExp(`^(${DECIMAL})(${[...UNITS].sort((a, b) => b.length - a.length).join("|")})?$`);
const DECIMAL_PATTERN = new RegExp(`^${DECIMAL}$`);
const INTEGER_PATTERN = /^\d+$/;

const DURATION_HINT = `seconds, or a number with ${UNITS.join(", ")} (90, 1.5, 500ms, 10m, 2h, 7d)`;

/** The longest DURATION li accepts (SPEC §18): 365 days. Longer ones are refused, never truncated. */
export const MAX_DURATION_SECONDS = 365 * UNIT_SECONDS.d;

export interface DurationRange {
  /** Accept 0 (e.g. `--phantom-grace 0`: act at once); negative values never parse (no sign is accepted). */
  allowZero?: boolean;
}

/** Parses a DURATION (`90`, `1.5`, `500ms`, `10m`, `2h`, `7d`) into seconds; throws a UsageError naming `flag` and the value. */
export function parseDuration(text: string, flag: string, range: DurationRange = {}): number {
  const match = DURATION_PATTERN.exec(text.trim());
  if (match === null) {
    throw new UsageError(`${flag}: ${JSON.stringify(text)} is not a duration (${DURATION_HINT})`);
  }
  const unit = (match[2] ?? "s") as DurationUnit;
  const seconds = Number(match[1]) * UNIT_SECONDS[unit];
  return requireDurationRange(seconds, text, flag, range);
}

/** A DURATION's seconds, checked: greater than zero and at most MAX_DURATION_SECONDS; throws a UsageError naming `flag` and `text`. */
export function requireDurationRange(seconds: number, text: string, flag: string, range: DurationRange = {}): number {
  if (!(range.allowZero && seconds === 0)) requirePositive(seconds, text, flag);
  if (seconds > MAX_DURATION_SECONDS) {
    throw new UsageError(`${flag}: ${JSON.stringify(text)} is longer than the maximum of 365d`);
  }
  return seconds;
}

/** Parses a finite decimal number greater than zero (`2`, `0.5`). */
export function parsePositiveNumber(text: string, flag: string): number {
  const trimmed = text.trim();
  if (!DECIMAL_PATTERN.test(trimmed)) {
    throw new UsageError(`${flag}: ${JSON.stringify(text)} is not a positive number`);
  }
  return requirePositive(Number(trimmed), text, flag);
}

/** Parses a whole number that is zero or more (`0`, `3`). */
export function parseNonNegativeInt(text: string, flag: string): number {
  const trimmed = text.trim();
  const value = Number(trimmed);
  if (!INTEGER_PATTERN.test(trimmed) || !Number.isSafeInteger(value)) {
    throw new UsageError(`${flag}: ${JSON.stringify(text)} is not a whole number of zero or more`);
  }
  return value;
}

/** Parses a whole number of one or more (`1`, `16`). */
export function parsePositiveInt(text: string, flag: string): number {
  const value = parseNonNegativeInt(text, flag);
  if (value === 0) throw new UsageError(`${flag}: ${JSON.stringify(text)} must be greater than zero`);
  return value;
}

function requirePositive(value: number, text: string, flag: string): number {
  if (!Number.isFinite(value)) {
    throw new UsageError(`${flag}: ${JSON.stringify(text)} is too large`);
  }
  if (value <= 0) {
    throw new UsageError(`${flag}: ${JSON.stringify(text)} must be greater than zero`);
  }
  return value;
}

/**
 * Human form of a length of time: "850ms", "12s", "3m05s", "2h10m", "3d4h".
 * Shows the two largest units and drops the rest (truncated, not rounded, past the minute);
 * a negative length (clock skew) is shown with a minus sign, a non-finite one as "?".
 */
export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds)) return "?";
  if (seconds < 0) return `-${formatDuration(-seconds)}`;
  const millis = Math.round(seconds * 1000);
  if (millis < 1000) return `${millis}ms`;
  const whole = Math.round(seconds);
  if (whole < 60) return `${whole}s`;
  const minutes = Math.floor(whole / 60);
  if (minutes < 60) return `${minutes}m${pad2(whole % 60)}s`;
  const hours = Math.floor(minutes / 60);
  if (hours < 24) return `${hours}h${pad2(minutes % 60)}m`;
  return `${Math.floor(hours / 24)}d${hours % 24}h`;
}

function pad2(n: number): string {
  return String(n).padStart(2, "0");
}
