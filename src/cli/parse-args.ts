// Turns a command's words into its arguments by its declared flags (src/cli/command.ts), after
// main.ts refused every unknown spelling. li's own rather than citty's parseArgs: that one loads
// node:util, the first `node:*` module of every command (~1 ms of start-up, docs/benchmarks.md).

import type { ParsedArgs } from "citty";
import { UsageError } from "../util/errors.ts";
import type { LiArgs } from "./command.ts";

type Value = string | boolean;

/**
 * `--name value`, `--name=value`, `-n value`, bundled short booleans (`-ab`, the last letter may take
 * a value), `--no-name` for booleans, `--flag=false`; the last of a repeated flag wins (repeatable
 * flags are read from the raw words). A boolean's `=value` is `true` or `false` and nothing else: read
 * loosely, `--files=no` would mean yes. Positionals fill the declared positional args in order and
 * all of them stay in `_`. A missing required positional or flag is a usage error naming it.
 */
export function parseArgs<A extends LiArgs>(tokens: readonly string[], defs: A, where = "li"): ParsedArgs<A> {
  const spelling = new Map<string, string>(); // every accepted spelling → the declared name
  for (const [name, def] of Object.entries(defs)) {
    if (def.type === "positional") continue;
    spelling.set(name, name);
    for (const alias of "alias" in def && def.alias !== undefined ? [def.alias].flat() : []) spelling.set(alias, name);
  }
  const typeOf = (name: string) => defs[name]!.type;
  const out: Record<string, unknown> = { _: [] as string[] };
  const positionals = out._ as string[];
  const set = (name: string, value: Value) => {
    if (typeOf(name) === "boolean") out[name] = booleanValue(name, value);
    else out[name] = value === true ? "" : value;
  };

  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i]!;
    if (!token.startsWith("-") || token === "-" || /^-\d/.test(token)) {
      positionals.push(token);
    } else if (token.startsWith("--")) {
      const eq = token.indexOf("=");
      const word = eq === -1 ? token.slice(2) : token.slice(2, eq);
      const name = spelling.get(word);
      if (name === undefined && word.startsWith("no-") && spelling.has(word.slice(3))) {
        // --no-NAME (only booleans are offered it) says its value itself: --no-NAME=… is no spelling.
        if (eq !== -1) throw new UsageError(`--${word} takes no value (got '${token.slice(eq + 1)}')`);
        out[spelling.get(word.slice(3))!] = false;
        continue;
      }
      if (name === undefined) continue; // unreachable: main.ts refused unknown spellings
      if (eq !== -1) set(name, token.slice(eq + 1));
      else if (typeOf(name) === "boolean") set(name, true);
      else if (i + 1 < tokens.length) set(name, tokens[++i]!);
    } else {
      const letters = token.slice(1);
      for (let k = 0; k < letters.length; k++) {
        const name = spelling.get(letters[k]!);
        if (name === undefined) continue;
        if (typeOf(name) === "boolean") {
          set(name, true);
          continue;
        }
        // A letter that takes a value takes the rest of the word, else the next word.
        const rest = letters.slice(k + 1);
        if (rest !== "") set(name, rest);
        else if (i + 1 < tokens.length) set(name, tokens[++i]!);
        break;
      }
    }
  }

  let next = 0;
  for (const [name, def] of Object.entries(defs)) {
    if (def.type === "positional") {
      const word = positionals[next++];
      if (word !== undefined) out[name] = word;
      else if (def.default !== undefined) out[name] = def.default;
      else if (def.required !== false) throw new UsageError(`missing ${name.toUpperCase()} for '${where}' (see ${where} --help)`);
      continue;
    }
    if (out[name] === undefined && def.default !== undefined) out[name] = def.default;
    if (def.type === "enum" && out[name] !== undefined && def.options && !def.options.includes(out[name] as string)) {
      throw new UsageError(`--${name}: '${String(out[name])}' is not one of ${def.options.join(", ")}`);
    }
    if (def.required === true && out[name] === undefined) throw new UsageError(`flag --${name} is required for '${where}' (see ${where} --help)`);
  }
  return out as ParsedArgs<A>;
}

/** A boolean flag's value: present, or spelled exactly `=true` / `=false`. */
function booleanValue(name: string, value: Value): boolean {
  if (typeof value === "boolean") return value;
  if (value === "true" || value === "false") return value === "true";
  throw new UsageError(`--${name}: '${value}' is not true or false (a switch: give --${name} or --no-${name})`);
}
