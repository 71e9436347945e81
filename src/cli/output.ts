// Rendering helpers shared by commands: JSON and aligned columns.

import { writeOut } from "./io.ts";

/** Text without its colour codes (for widths, and for error lines). */
export const stripAnsi = (s: string) => s.replace(/\x1b\[[0-9;]*m/g, "");

export function writeJson(value: unknown): void {
  writeOut(JSON.stringify(value) + "\n");
}

/** Columns padded to the widest cell; the last column is not padded. */
export function table(rows: string[][], widthOf: (cell: string) => number = (c) => stripAnsi(c).length): string {
  if (rows.length === 0) return "";
  const widths: number[] = [];
  for (const row of rows) row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, widthOf(cell))));
  return rows.map((row) => row.map((cell, i) => (i === row.length - 1 ? cell : cell + " ".repeat(widths[i]! - widthOf(cell)))).join("  ")).join("\n") + "\n";
}

/** Parses a JSON column for display; returns the raw text when it is not JSON. */
export function parseJsonColumn(value: unknown): unknown {
  if (typeof value !== "string") return value ?? null;
  try {
    return JSON.parse(value);
  } catch {
    return value;
  }
}
