// Colour for human output: only on a terminal, never with NO_COLOR or TERM=dumb (§13).

import { isTerminal as isTerminalStatus, SUCCESS_STATUS, type EntityKind } from "../lifecycle/policy.ts";
import { isTerminal } from "./terminal.ts";

export function useColour(fd = 1): boolean {
  // The environment first: it is free, and the terminal check loads node:fs.
  return !process.env.NO_COLOR && process.env.TERM !== "dumb" && isTerminal(fd);
}

const CODES = { red: 31, green: 32, yellow: 33, blue: 34, dim: 2, bold: 1 } as const;
export type Colour = keyof typeof CODES;

/** Yellow while it runs, green for the kind's success status, red for every other terminal status. */
export function statusColour(kind: EntityKind, status: string): Colour | null {
  if (!isTerminalStatus(kind, status)) return "yellow";
  return status === SUCCESS_STATUS[kind] ? "green" : "red";
}

export function paint(text: string, colour: Colour | null, on: boolean): string {
  return on && colour ? `\x1b[${CODES[colour]}m${text}\x1b[0m` : text;
}

