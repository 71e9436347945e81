// A command's captured output shown on a terminal by `li logs` (§13, §18): its colours kept (SGR, the
// sequences `less -R` passes), a carriage return honoured as the command meant it (the line shows its last
// state: li returns to the line's start and clears it, with sequences of its own), and every other control
// escaped as safeLines escapes it (a title, the clipboard, a cursor move, a screen clear). Chunks may split
// a sequence anywhere: an incomplete one is held for the next chunk.

import { safeLines } from "../util/text.ts";

/** CSI, parameters (digits, `;`, `:`), `m`: a colour or attribute, and nothing else. Bounded, so a run of parameters is no sequence. */
const SGR = /^\x1b\[[0-9;:]{0,32}m/;
/** What the start of an SGR looks like before its last byte has arrived. */
const SGR_START = /^\x1b(\[[0-9;:]{0,32})?$/;
const SPECIAL = /[\x1b\r]/g;
/** Back to the line's start, erase it: the overwritten text does not linger past the new one. */
const REWRITE_LINE = "\r\x1b[K";

export class TerminalText {
  /** The end of the last chunk when it may continue in the next: an incomplete SGR, or a carriage return. */
  private held = "";
  /** Whether a colour went out: the end resets it, so li's own lines after the output are not painted. */
  private coloured = false;

  /** The chunk, ready for the terminal. */
  push(chunk: string): string {
    const text = this.held + chunk;
    this.held = "";
    let out = "";
    let from = 0;
    SPECIAL.lastIndex = 0;
    for (let m = SPECIAL.exec(text); m !== null; m = SPECIAL.exec(text)) {
      const at = m.index;
      out += safeLines(text.slice(from, at));
      const rest = text.slice(at);
      if (m[0] === "\r") {
        if (rest.length === 1) {
          this.held = "\r";
          return out;
        }
        // CR LF is a line end; a CR before more text rewrites the line.
        out += text[at + 1] === "\n" ? "" : REWRITE_LINE;
        from = at + 1;
      } else {
        const sgr = SGR.exec(rest);
        if (sgr) {
          out += sgr[0];
          this.coloured = true;
          from = at + sgr[0].length;
        } else if (SGR_START.test(rest)) {
          this.held = rest;
          return out;
        } else {
          out += safeLines("\x1b");
          from = at + 1;
        }
      }
      SPECIAL.lastIndex = from;
    }
    return out + safeLines(text.slice(from));
  }

  /** What is still held once the output has ended (a trailing carriage return moves nothing; a cut sequence is escaped), and a colour reset. */
  end(): string {
    const held = this.held === "\r" ? "" : safeLines(this.held);
    const reset = this.coloured ? "\x1b[0m" : "";
    this.held = "";
    this.coloured = false;
    return held + reset;
  }
}
