// Callback argv templates (SPEC §9.2): POSIX word splitting without a shell, placeholder checks and substitution.

import { UsageError } from "../util/errors.ts";

/** The placeholders a callback argv may hold. Everything else here derives from this list. */
export const PLACEHOLDERS = [
  "status",
  "previous_status",
  "reason",
  "id",
  "kind",
  "event_id",
  "exit_code",
  "artifact_dir",
  "branch_id",
  "session_id",
  "run_id",
] as const;

export type Placeholder = (typeof PLACEHOLDERS)[number];

/** Values for `renderArgv`; a missing or null value renders as the empty string. */
export type PlaceholderValues = Readonly<Partial<Record<Placeholder, string | null>>>;

const PLACEHOLDER_SET: ReadonlySet<string> = new Set(PLACEHOLDERS);

/** `{identifier}`; braces around anything else (`{}`, `{a-b}`, `{ x }`) are literal text. */
const PLACEHOLDER_PATTERN = /\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

export function isPlaceholder(name: string): name is Placeholder {
  return PLACEHOLDER_SET.has(name);
}

/** A template that cannot be used; `problem` never holds an argument value in full. */
export class ArgvTemplateError extends UsageError {
  constructor(readonly problem: string) {
    super(problem);
  }
}

/** Unquoted characters that only make sense to a shell, with the name shown in the warning. */
const SHELL_FEATURES: ReadonlyArray<readonly [token: string, name: string]> = [
  // Two-character forms first, so `&&` is reported as `&&` rather than `&`.
  ["||", "a logical or"],
  ["&&", "a logical and"],
  ["$(", "a command substitution"],
  ["${", "a parameter expansion"],
  ["|", "a pipe"],
  [";", "a command separator"],
  ["&", "a background operator"],
  ["<", "a redirection"],
  [">", "a redirection"],
  ["$", "a variable expansion"],
  ["`", "a command substitution"],
  ["(", "a subshell"],
  [")", "a subshell"],
];

const SHELL_CHARS: ReadonlySet<string> = new Set(SHELL_FEATURES.map(([token]) => token[0] ?? ""));

const BLANKS: ReadonlySet<string> = new Set([" ", "\t"]);

/** At most the first 12 characters of `text`, so a warning never carries a secret argument in full. */
export function previewWord(text: string): string {
  const chars = [...text];
  return chars.length <= 12 ? text : `${chars.slice(0, 12).join("")}…`;
}

/**
 * Splits a template into words like a POSIX shell would, with none of its interpretation:
 * single quotes keep everything literal; double quotes too, except that `\"` and `\\` escape;
 * a backslash outside quotes makes the next character literal (backslash-newline is removed).
 * Unquoted shell syntax (pipes, lists, redirections, `$`, backticks, parentheses, a newline) is an error.
 * Throws ArgvTemplateError; positions in messages are 1-based characters of the template.
 */
export function splitTemplate(template: string): string[] {
  const words: string[] = [];
  let word = "";
  let inWord = false;
  let i = 0;
  const at = (index: number) => `character ${index + 1}`;

  while (i < template.length) {
    const ch = template[i] as string;
    if (BLANKS.has(ch)) {
      if (inWord) words.push(word);
      word = "";
      inWord = false;
      i += 1;
    } else if (ch === "\\") {
      const next = template[i + 1];
      if (next === undefined) throw new ArgvTemplateError(`trailing backslash at ${at(i)}`);
      if (next !== "\n") {
        word += next;
        inWord = true;
      }
      i += 2;
    } else if (ch === "'") {
      const close = template.indexOf("'", i + 1);
      if (close === -1) throw new ArgvTemplateError(`unterminated single quote opened at ${at(i)}`);
      word += template.slice(i + 1, close);
      inWord = true;
      i = close + 1;
    } else if (ch === '"') {
      const opened = i;
      i += 1;
      for (;;) {
        const inner = template[i];
        if (inner === undefined) throw new ArgvTemplateError(`unterminated double quote opened at ${at(opened)}`);
        if (inner === '"') break;
        const escaped = template[i + 1];
        if (inner === "\\" && (escaped === '"' || escaped === "\\")) {
          word += escaped;
          i += 2;
        } else {
          word += inner;
          i += 1;
        }
      }
      inWord = true;
      i += 1;
    } else if (ch === "\n") {
      // To a shell an unquoted newline ends a command and starts the next one: taking it for a space
      // would run `a` with the next line's words as arguments instead (issue 10).
      throw new ArgvTemplateError(`unquoted newline (a command separator) at ${at(i)} needs a shell; li runs the command without one (quote it to pass it literally)`);
    } else if (SHELL_CHARS.has(ch)) {
      const [token, name] = SHELL_FEATURES.find(([t]) => template.startsWith(t, i)) ?? [ch, "shell syntax"];
      throw new ArgvTemplateError(
        `unquoted '${token}' (${name}) at ${at(i)} needs a shell; li runs the command without one (quote it to pass it literally)`,
      );
    } else {
      word += ch;
      inWord = true;
      i += 1;
    }
  }
  if (inWord) words.push(word);
  if (words.length === 0) throw new ArgvTemplateError("the template is empty");
  return words;
}

/** Checks words that are already split: a non-empty command, no NUL bytes, only known placeholders. */
function checkWords(words: readonly string[]): void {
  if (words.length === 0) throw new ArgvTemplateError("the argv is empty");
  if (words[0] === "") throw new ArgvTemplateError("the command (word 1) is empty");
  words.forEach((word, index) => {
    const where = `word ${index + 1}`;
    const nul = word.indexOf("\0");
    if (nul !== -1) throw new ArgvTemplateError(`${where} (${JSON.stringify(previewWord(word))}) holds a NUL character at character ${nul + 1}`);
    for (const match of word.matchAll(PLACEHOLDER_PATTERN)) {
      const name = match[1] ?? "";
      if (!isPlaceholder(name)) {
        throw new ArgvTemplateError(
          `unknown placeholder {${previewWord(name)}} in ${where} (${JSON.stringify(previewWord(word))}) at character ${match.index + 1}; known: ${PLACEHOLDERS.map((p) => `{${p}}`).join(", ")}`,
        );
      }
    }
  });
}

export type CompiledArgv = { readonly ok: true; readonly argv: readonly string[] } | { readonly ok: false; readonly warning: string };

/**
 * Compiles a `--notify` style template. `origin` names the flag or settings key; a bad template
 * yields a warning (the caller disables the callback) rather than an error, so a run never fails on it.
 */
export function compileTemplate(template: string, origin: string): CompiledArgv {
  return compile(origin, () => splitTemplate(template));
}

/** Compiles the settings form `argv: [word, …]`: words are used literally, only placeholders are checked. */
export function compileArgvWords(words: readonly string[], origin: string): CompiledArgv {
  return compile(origin, () => [...words]);
}

function compile(origin: string, split: () => string[]): CompiledArgv {
  try {
    const argv = split();
    checkWords(argv);
    return { ok: true, argv: Object.freeze(argv) };
  } catch (error) {
    if (!(error instanceof ArgvTemplateError)) throw error;
    return { ok: false, warning: `${origin}: ${error.problem}; the callback is disabled` };
  }
}

/**
 * Substitutes placeholders inside each word, never re-splitting. Single pass: a value that itself
 * contains `{status}` is not expanded again. A missing or null value renders as "".
 */
export function renderArgv(argv: readonly string[], values: PlaceholderValues): string[] {
  return argv.map((word) =>
    word.replace(PLACEHOLDER_PATTERN, (whole, name: string) => (isPlaceholder(name) ? (values[name] ?? "") : whole)),
  );
}
