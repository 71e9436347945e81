// One self-rewriting status line on stderr for long work (`li state prune`, `li wait` on several ids, a
// foreground `li watch`'s prune), only when stderr is a terminal: stdout is never touched, and into a
// pipe or a file nothing is printed at all.

import { writeAll } from "./fd.ts";
import { cut } from "./output.ts";
import { isTerminal, terminalWidth } from "./terminal.ts";
import { safeText } from "../util/text.ts";

/** Erase the line the cursor is on and return to its start. */
const ERASE = "\r\x1b[K";

export class StatusLine {
  private shown = "";
  private lastDrawMs = -Infinity;

  private constructor(
    private readonly width: number,
    private readonly minIntervalMs: number,
  ) {}

  /** A status line on stderr, or null when stderr is not a terminal. */
  static onStderr(options: { minIntervalMs?: number } = {}): StatusLine | null {
    if (!isTerminal(2)) return null;
    return new StatusLine(terminalWidth(2) ?? 80, options.minIntervalMs ?? 100);
  }

  /** Replaces the line (at most every minIntervalMs unless `force`); cut to the terminal so it never wraps. */
  show(text: string, force = false): void {
    const now = performance.now();
    if (!force && now - this.lastDrawMs < this.minIntervalMs) return;
    this.lastDrawMs = now;
    const line = cut(safeText(text), Math.max(1, this.width - 1));
    if (line === this.shown) return;
    this.shown = line;
    writeAll(2, ERASE + line);
  }

  /** Removes the line, so other output starts on a clean line. */
  clear(): void {
    if (this.shown === "") return;
    this.shown = "";
    writeAll(2, ERASE);
  }

  /** Writes something else (a result line on stdout) without tearing the status line, then puts it back. */
  around(write: () => void): void {
    const text = this.shown;
    this.clear();
    write();
    if (text !== "") this.show(text, true);
  }
}

/** `prune: batch 3/10 · 300 sessions · 1520 sessions/s`. */
export function pruneProgressText(p: { batches: number; estimatedBatches: number; sessions: number; elapsedMs: number }): string {
  const rate = p.elapsedMs > 0 ? Math.round((p.sessions * 1000) / p.elapsedMs) : 0;
  return `prune: batch ${p.batches}/${p.estimatedBatches} · ${p.sessions} sessions · ${rate} sessions/s`;
}
