// How argv names a command (§16): the words before `--` walk the command tree, the global `--db` taken
// out first. main.ts routes with it; the early ledger open (early-ledger.ts) looks ahead with it.

import { UsageError } from "../util/errors.ts";
import { isGroup, type Command, type Group } from "./tree-node.ts";
import { TREE } from "./tree.ts";

export interface SplitArgv {
  /** li's own tokens: before `--`, without `--db`. */
  tokens: string[];
  /** What follows `--` (a leg's command), or null when there is no `--`. */
  passthrough: string[] | null;
  /** The global `--db` value, when given. */
  dbFlag: string | undefined;
  wantsHelp: boolean;
}

/** Splits argv at `--` and pulls the global `--db` out of li's own tokens. */
export function splitArgv(argv: readonly string[]): SplitArgv {
  const dashdash = argv.indexOf("--");
  const own = dashdash === -1 ? argv : argv.slice(0, dashdash);
  const tokens: string[] = [];
  let dbFlag: string | undefined;
  for (let i = 0; i < own.length; i++) {
    const token = own[i]!;
    if (token === "--db" || token.startsWith("--db=")) {
      const value = token === "--db" ? own[++i] : token.slice(5);
      if (value === undefined || value === "") throw new UsageError("flag --db needs a path or a postgres:// URL");
      dbFlag = value;
    } else tokens.push(token);
  }
  return { tokens, passthrough: dashdash === -1 ? null : argv.slice(dashdash + 1), dbFlag, wantsHelp: tokens.includes("--help") || tokens.includes("-h") };
}

export interface Walked {
  /** A command, or the group where the walk stopped. */
  node: Command | Group;
  /** The words walked. */
  path: string[];
  /** The index in `tokens` of the first token not walked. */
  next: number;
}

/** Walks the tree by `tokens`' leading words: it stops at a command, at a flag or the end, or at a word the group does not have. */
export function walk(tokens: readonly string[]): Walked {
  let node: Command | Group = TREE;
  const path: string[] = [];
  let next = 0;
  while (isGroup(node)) {
    const word = tokens[next];
    if (word === undefined || word.startsWith("-")) break;
    const child: Command | Group | undefined = node.commands[word];
    if (!child) break;
    path.push(word);
    node = child;
    next++;
  }
  return { node, path, next };
}
