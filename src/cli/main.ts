// The entry point: routes argv through the command tree, enforces the one flag convention (kebab-case,
// one spelling, strict), opens and closes the ledger a command declares, and owns every exit code (§16).

import { ExitCode, UsageError } from "../util/errors.ts";
import { holdLedgerLong } from "../ledger/slot-use.ts";
import type { LedgerNeed, LiArgs, LiCommand } from "./command.ts";
import type { Patience } from "../ledger/patience.ts";
import { ledgerRetrySeconds, notedPatience } from "./patience.ts";
import { cliContext } from "./globals.ts";
import { writeErr, writeNote, writeOut } from "./io.ts";
import { parseArgs } from "./parse-args.ts";
import { splitArgv, walk } from "./route.ts";
import { isGroup } from "./tree-node.ts";
import { versionText } from "./version.ts";
import { mark } from "../util/profile.ts";

export { commandPaths, TREE } from "./tree.ts";

// `--help` and the error path load their modules when they happen: every command's start-up pays for
// what it runs, not for the help renderer or the error mapping (and the ledger adapters' classifiers
// behind it), docs/benchmarks.md "Start-up".
const help = () => import("./help.ts");

/**
 * The spellings a command accepts: each flag's declared (kebab-case) name, its one-letter alias,
 * `--no-NAME` for booleans. citty would also take camelCase spellings; li refuses them as unknown.
 */
function knownFlags(args: LiArgs): { names: Set<string>; takesValue: Set<string> } {
  const names = new Set<string>(["help", "h"]);
  const takesValue = new Set<string>();
  for (const [name, def] of Object.entries(args)) {
    if (def.type === "positional") continue;
    const alias = "alias" in def && def.alias !== undefined ? [def.alias].flat() : [];
    for (const spelling of [name, ...alias]) {
      names.add(spelling);
      if (def.type === "string" || def.type === "enum") takesValue.add(spelling);
      if (def.type === "boolean") names.add(`no-${spelling}`);
    }
  }
  return { names, takesValue };
}

/** Unknown flags are refused with one line naming the flag, before anything is parsed. */
function rejectUnknownFlags(tokens: string[], args: LiArgs, where: string): void {
  const { names, takesValue } = knownFlags(args);
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i]!;
    if (!token.startsWith("-") || token === "-" || /^-\d/.test(token)) continue;
    const body = token.replace(/^--?/, "");
    const name = body.split("=", 1)[0]!;
    if (!token.startsWith("--") && name.length > 1) {
      // Short flags may be bundled (-abc): each letter must be known.
      for (const letter of name) if (!names.has(letter)) throw new UsageError(`unknown flag -${letter} for '${where}' (see ${where} --help)`);
      continue;
    }
    if (!names.has(name)) throw new UsageError(`unknown flag ${token.split("=", 1)[0]} for '${where}' (see ${where} --help)`);
    if (takesValue.has(name) && !body.includes("=")) {
      if (i + 1 >= tokens.length) throw new UsageError(`flag ${token} needs a value`);
      i++;
    }
  }
}

/**
 * The ledger opener for a command's declared need, imported only then: the read path never loads the
 * write path (drizzle, zod), and `none` loads neither.
 */
async function ledgerOpener(need: LedgerNeed): Promise<(patience: Patience) => { close(): void }> {
  if (need === "none") return () => {
    throw new Error("this command declared no ledger");
  };
  if (need === "reads") {
    const [{ openReads }, { cliPaths }] = await Promise.all([import("../ledger/open-reads.ts"), import("./paths.ts")]);
    return (patience) => openReads(cliPaths(), patience);
  }
  const { cliLedger } = await import("./context.ts");
  return (patience) => cliLedger({ create: need === "create", patience });
}

async function requireOwnedPaths(): Promise<void> {
  const [{ requireOwnedPaths: check }, { cliPaths }] = await Promise.all([import("./owned-paths.ts"), import("./paths.ts")]);
  await check(cliPaths());
}

/** Parses, runs, and closes the ledger the command opened, whatever happens in between. */
async function execute(command: LiCommand, where: string, rest: string[], passthrough: string[] | null): Promise<number> {
  rejectUnknownFlags(rest, command.args, where);
  if (passthrough !== null && !command.takesCommand) throw new UsageError(`'${where}' takes no command after --`);
  const args = parseArgs(rest, command.args, where);
  const patience = defaultPatience(args as Record<string, unknown>);
  mark("args parsed");
  // Before anything is read from them: a home, ledger or settings file another user could have planted is refused (§18).
  if (command.ledger !== "none") await requireOwnedPaths();
  mark("owner and mode checks");
  if (command.longLived) holdLedgerLong();
  const opensNone = command.opensNoLedger?.(args as never) === true;
  const open = await ledgerOpener(opensNone ? "none" : command.ledger);
  if (!opensNone) mark("ledger opener loaded");
  let opened: { close(): void } | null = null;
  try {
    const exit = await command.run({ args, rawArgs: rest, passthrough, ledger: (asked?: Patience) => (opened ??= open(asked ?? patience)) as never });
    // §17: a command that wrote replays this host's spooled outcomes — unless its ledger failed it just now.
    if (opened !== null && command.ledger !== "reads" && exit !== ExitCode.unavailable && !cliContext.ledgerFailed) {
      const { replayAfterWrite } = await import("./replay-spool.ts");
      mark("command returned");
      await replayAfterWrite(opened as never);
      mark("spool replay");
    }
    return exit;
  } finally {
    (opened as { close(): void } | null)?.close();
    mark("ledger closed");
  }
}

/**
 * How long a command waits for an unreachable ledger unless it asks otherwise: its `--ledger-retry`
 * (LEDGER_RETRY_ARG), else 10 s; told once on stderr (§17).
 */
function defaultPatience(args: Record<string, unknown>): Patience {
  return notedPatience(ledgerRetrySeconds(args));
}

export async function main(argv: string[]): Promise<number> {
  const { tokens, passthrough, dbFlag, wantsHelp } = splitArgv(argv);
  cliContext.dbFlag = dbFlag;
  const { node, path, next: i } = walk(tokens);
  if (isGroup(node)) {
    const word = tokens[i];
    if (word !== undefined && !word.startsWith("-")) throw new UsageError(`unknown command '${[...path, word].join(" ")}' (see ${["li", ...path].join(" ")} --help)`);
    if (path.length === 0 && (word === "--version" || word === "-V")) {
      const json = tokens.slice(i + 1);
      if (json.length > 1 || (json.length === 1 && json[0] !== "--json")) throw new UsageError(`unknown flag ${json.find((t) => t !== "--json")} for 'li --version'`);
      writeOut(versionText(json.length === 1));
      return ExitCode.ok;
    }
    const fallback = node.fallback ? await node.fallback.load() : null;
    if (wantsHelp || word === undefined) {
      writeOut((await help()).groupHelp(path, node, fallback));
      return word === undefined && !wantsHelp ? ExitCode.usage : ExitCode.ok;
    }
    if (fallback) return execute(fallback, `li ${path.join(" ")}`, tokens.slice(i), passthrough);
    throw new UsageError(`unknown flag ${word} for '${["li", ...path].join(" ")}' (see ${["li", ...path].join(" ")} --help)`);
  }
  const command = await node.load();
  mark("command module loaded");
  const where = `li ${path.join(" ")}`;
  if (wantsHelp) {
    writeOut((await help()).commandHelp(where, command));
    return ExitCode.ok;
  }
  return execute(command, where, tokens.slice(i), passthrough);
}

/** Maps an error to its documented exit code and one line on stderr; never a stack trace for users. */
export function reportError(error: unknown): number {
  // Synchronous, so a failure anywhere still reports through here; loaded only now (see `help` above).
  const { exitFor } = require("./exit.ts") as typeof import("./exit.ts");
  const { stripAnsi } = require("./output.ts") as typeof import("./output.ts");
  const { exit, message } = exitFor(error);
  // The whole message on one line, escaped: it may quote the user's own value (an id, a path, a flag's argument).
  writeNote(stripAnsi(message).trimEnd());
  if (exit === ExitCode.internal && process.env.LI_DEBUG && error instanceof Error) writeErr(`${error.stack}\n`);
  return exit;
}
