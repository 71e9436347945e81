// A node of the command tree: a command or a group of them. Apart from the tree itself (tree.ts), so what
// walks a tree (help, completion) needs no import of the one tree, whose completion commands load them.

import type { LiCommand } from "./command.ts";

export type Command = { summary: string; load: () => Promise<LiCommand> };
export type Group = {
  description: string;
  examples: readonly string[];
  commands: Record<string, Command | Group>;
  /** What `li GROUP --flag…` runs when no subcommand word is given (kept where SPEC promises that spelling). */
  fallback?: Command;
};

export function isGroup(node: Command | Group): node is Group {
  return "commands" in node;
}
