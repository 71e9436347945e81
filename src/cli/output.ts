// Rendering helpers shared by commands: JSON and aligned columns.

import { paint, type Colour } from "./colour.ts";
import { writeOut } from "./io.ts";
import { safeText } from "../util/text.ts";

/** Text without its colour codes (for widths, and for error lines). */
export const stripAnsi = (s: string) => s.replace(/\x1b\[[0-9;]*m/g, "");

export function writeJson(value: unknown): void {
  writeOut(JSON.stringify(value) + "\n");
}

/** A table cell that is painted when colour is on (the text is escaped either way). */
export interface Painted {
  text: string;
  colour: Colour | null;
}

export type Cell = string | Painted;

export interface TableOptions {
  /** Paint Painted cells (useColour()). */
  colour?: boolean;
  /** Cut each row to this many characters by shortening its last column (marked with …); never below its other columns. */
  maxWidth?: number;
}

/**
 * Columns padded to the widest cell; the last column is not padded. Every cell is stored or user data
 * as far as the table knows, so each passes through safeText (§18): a cell can never hold a control.
 */
export function table(rows: Cell[][], options: TableOptions = {}): string {
  if (rows.length === 0) return "";
  const texts = rows.map((row) => row.map((cell) => safeText(typeof cell === "string" ? cell : cell.text)));
  const widths: number[] = [];
  for (const row of texts) row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, displayWidth(cell))));
  const lines = texts.map((row, r) => {
    let line = "";
    let visible = 0;
    row.forEach((text, i) => {
      const last = i === row.length - 1;
      if (i > 0) (line += "  "), (visible += 2);
      const shown = last && options.maxWidth !== undefined ? cut(text, Math.max(1, options.maxWidth - visible)) : text;
      const cell = rows[r]![i]!;
      line += typeof cell === "string" ? shown : paint(shown, cell.colour, options.colour === true);
      if (!last) (line += " ".repeat(widths[i]! - displayWidth(text))), (visible += widths[i]!);
    });
    // An empty last cell would leave the column gap behind.
    return line.trimEnd();
  });
  return lines.join("\n") + "\n";
}

/** Columns a (escaped, colourless) text takes on a terminal: wide CJK and emoji count two (Bun's own measure). */
export const displayWidth = (text: string): number => Bun.stringWidth(text);

/** `text` in at most `width` terminal columns, its end replaced by … when cut (never inside a character). */
export function cut(text: string, width: number): string {
  if (displayWidth(text) <= width) return text;
  let out = "";
  let used = 0;
  for (const ch of text) {
    const w = displayWidth(ch);
    if (used + w > width - 1) break;
    out += ch;
    used += w;
  }
  return `${out}…`;
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
