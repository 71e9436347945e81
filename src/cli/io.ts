// Writing li's own text to stdout and stderr, without touching Node's stream objects or `node:*`
// modules. In the compiled binary the first touch of `process.stdout` measured ~10 ms and ~9 MB, and
// the first `node:fs`/`node:path` import ~1.3 ms: more than the rest of `li wait` together.
// console.log/console.error are Bun-native and write synchronously (a slow reader gets every line
// even when the process exits right after), so lines still appear as they are produced.

import { safeText } from "../util/text.ts";

/** Writes whole lines to stdout: `text` is one or more lines; a missing final newline is added. */
export function writeOut(text: string): void {
  if (text !== "") console.log(text.endsWith("\n") ? text.slice(0, -1) : text);
}

/** Writes whole lines to stderr, like writeOut. */
export function writeErr(text: string): void {
  if (text !== "") console.error(text.endsWith("\n") ? text.slice(0, -1) : text);
}

/** One diagnostic line on stderr, `li: ` first; the line may quote stored or user values, so it is escaped whole (§18). */
export function writeNote(line: string): void {
  writeErr(`li: ${safeText(line)}\n`);
}
