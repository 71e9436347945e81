// Stored or user data made safe to print on a terminal (SPEC §18): every human renderer passes such
// text through here, so an argv word, a reason or a path cannot move the cursor, set the clipboard
// (OSC 52), clear the screen or forge a line. `--json` never goes through it (JSON escapes exactly).
// Free of imports: the read-only commands load it on their fast path.

/**
 * What is shown escaped: C0 controls (tab and newline too: a renderer adds its own), DEL, C1 controls
 * (0x9b is a one-byte CSI on some terminals), the line/paragraph separators and the bidirectional
 * overrides and isolates (they reorder what a reader sees), and lone surrogates (text decoded from
 * invalid UTF-16; invalid UTF-8 already arrives as U+FFFD, which is printable).
 */
const UNSAFE = /[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** Same set, for a quick test before paying for a replace (most text has nothing to escape). */
const HAS_UNSAFE = new RegExp(UNSAFE.source);

function escapeChar(ch: string): string {
  const code = ch.charCodeAt(0);
  return code < 0x100 ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16).padStart(4, "0")}`;
}

/**
 * One value as one line of printable text: controls become `\x1b`, `\x0a`, `\x9b`, `\u202e` …
 * `null`/`undefined` print as `-`, other non-strings through String().
 */
export function safeText(value: unknown): string {
  const text = value === null || value === undefined ? "-" : typeof value === "string" ? value : String(value);
  return HAS_UNSAFE.test(text) ? text.replace(UNSAFE, escapeChar) : text;
}

/**
 * Text whose own lines are the point (a command's captured output in `li logs`): newline and tab are
 * kept, every other unsafe character is escaped as in safeText (a carriage return too: it would let
 * one line overwrite another on screen).
 */
export function safeLines(text: string): string {
  return HAS_UNSAFE.test(text) ? text.replace(UNSAFE, (ch) => (ch === "\n" || ch === "\t" ? ch : escapeChar(ch))) : text;
}
