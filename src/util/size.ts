// Parsing and formatting of SIZE values (`agent.stream_max`, `agent.stream_reserve`, SPEC §20).

import { UsageError } from "./errors.ts";

/** Bytes per unit: powers of 1024 whatever the spelling (64M, 64MB, 64MiB are the same size). */
const UNIT_BYTES: Record<string, number> = { "": 1, b: 1, k: 1024, kb: 1024, kib: 1024, m: 1024 ** 2, mb: 1024 ** 2, mib: 1024 ** 2, g: 1024 ** 3, gb: 1024 ** 3, gib: 1024 ** 3, t: 1024 ** 4, tb: 1024 ** 4, tib: 1024 ** 4 };
const SIZE_PATTERN = /^(\d+(?:\.\d+)?|\.\d+)\s*([a-z]*)$/i;
const PERCENT_PATTERN = /^(\d+(?:\.\d+)?|\.\d+)\s*%$/;
const SIZE_HINT = "bytes, or a number with K, M, G or T (500000, 512K, 64M, 2G)";

/** A size or a share of the file system (`1%`): what `agent.stream_reserve` holds. */
export type SizeOrShare = { bytes: number } | { percent: number };

/** Parses a SIZE (`500000`, `512K`, `64MiB`, `2G`) into whole bytes; throws a UsageError naming `flag` and the value. */
export function parseSize(text: string, flag: string): number {
  const match = SIZE_PATTERN.exec(text.trim());
  const unit = match ? UNIT_BYTES[match[2]!.toLowerCase()] : undefined;
  if (!match || unit === undefined) throw new UsageError(`${flag}: ${JSON.stringify(text)} is not a size (${SIZE_HINT})`);
  const bytes = Math.floor(Number(match[1]) * unit);
  if (!Number.isSafeInteger(bytes)) throw new UsageError(`${flag}: ${JSON.stringify(text)} is too large`);
  return bytes;
}

/** A SIZE, or a percentage of the file system's size (`1%`, `0.5%`, at most 100%). */
export function parseSizeOrShare(text: string, flag: string): SizeOrShare {
  const share = PERCENT_PATTERN.exec(text.trim());
  if (share === null) return { bytes: parseSize(text, flag) };
  const percent = Number(share[1]);
  if (percent > 100) throw new UsageError(`${flag}: ${JSON.stringify(text)} is more than 100%`);
  return { percent };
}

/** Human form: "512B", "20.0KiB", "64.0MiB", "2.00GiB". */
export function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes}B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(value < 10 ? 2 : 1)}${units[unit]}`;
}
