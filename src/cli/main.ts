// The entry point: routes argv to a command, enforces strict flags, and owns every exit code (§16).

import { renderUsage, runCommand, type ArgsDef, type CommandDef } from "citty";
import { ExitCode, UsageError } from "../util/errors.ts";
import { exitFor } from "./exit.ts";
import { VERSION } from "./version.ts";
import { cliContext } from "./globals.ts";
import { writeErr, writeNote, writeOut } from "./io.ts";
import { stripAnsi } from "./output.ts";

type Command = { summary: string; load: () => Promise<CommandDef<any>> };
type Group = { description: string; commands: Record<string, Command | Group> };

/** A command: its one-line summary (for `li --help`, without loading it) and its lazy module. */
const cmd = (summary: string, f: () => Promise<{ default: CommandDef<any> }>): Command => ({ summary, load: () => f().then((m) => m.default) });

/** The command tree. Subcommands load lazily so start-up only pays for the command it runs. */
export const TREE: Group = {
  description: "li — a run ledger for build and agent machines",
  commands: {
    agent: cmd("run a command as a tracked leg: li agent [options] -- <command…>", () => import("./commands/agent.ts")),
    wait: cmd("block until runs are terminal; one frozen line per run", () => import("./commands/wait.ts")),
    ls: cmd("list recent sessions and other entities", () => import("./commands/ls.ts")),
    show: cmd("one entity with its legs, history, verification and notices", () => import("./commands/show.ts")),
    kill: cmd("stop a running leg (or every stale one) and record it cancelled", () => import("./commands/kill.ts")),
    watch: cmd("the service: durable delivery, phantom reaping, linked finalizing, optional prune", () => import("./commands/watch.ts")),
    events: cmd("terminal events: handlers, consumers, acknowledgements, delivery", () => import("./commands/events.ts")),
    reasons: cmd("the reason-code vocabulary", () => import("./commands/reasons.ts")),
    state: {
      description: "create, repair and inspect ledger entities",
      commands: {
        create: cmd("create an invocation, play, schedule_run, show or team", () => import("./commands/state-create.ts")),
        "set-status": cmd("move an entity through the guarded write (audited repairs)", () => import("./commands/state-set-status.ts")),
        transitions: cmd("the status history of one entity", () => import("./commands/state-transitions.ts")),
        doctor: cmd("sweep running sessions whose current leg is stale and dead", () => import("./commands/state-doctor.ts")),
        prune: cmd("delete terminal sessions past retention", () => import("./commands/state-prune.ts")),
      },
    },
  },
};

/** Commands that take a command line after `--` (everything else refuses one). */
// `li events` is one command dispatching its sub-words; it refuses `--` itself except for `handlers add`.
const TAKES_COMMAND: ReadonlySet<string> = new Set(["agent", "events"]);

/** Every command's words, walked from the tree (tests drive every command from this). */
export function commandPaths(group: Group = TREE, prefix: string[] = []): string[][] {
  return Object.entries(group.commands).flatMap(([name, node]) => (isGroup(node) ? commandPaths(node, [...prefix, name]) : [[...prefix, name]]));
}

function isGroup(node: Command | Group): node is Group {
  return "commands" in node;
}

function groupUsage(path: string[], group: Group): string {
  const lines = [`${group.description}`, "", `USAGE: li ${[...path, "<command>"].join(" ")} [--help]`, "", "COMMANDS:"];
  const width = Math.max(...Object.keys(group.commands).map((k) => k.length));
  for (const [name, node] of Object.entries(group.commands)) {
    lines.push(`  ${name.padEnd(width)}  ${isGroup(node) ? node.description : node.summary}`.trimEnd());
  }
  if (path.length === 0) {
    lines.push("", "GLOBAL OPTIONS:", "  --db PATH|URL   the ledger (beats LI_DB; default $LI_HOME/state.db)", "  --version       print li's version", "  --help          print help");
  }
  return lines.join("\n") + "\n";
}

/** Every spelling of a flag the command accepts: names, aliases, kebab forms, `--no-` negations. */
function knownFlags(args: ArgsDef): { names: Set<string>; takesValue: Set<string> } {
  const names = new Set<string>(["help", "h"]);
  const takesValue = new Set<string>();
  for (const [name, def] of Object.entries(args)) {
    if (def.type === "positional") continue;
    const kebab = name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
    const alias = (def as { alias?: string | string[] }).alias;
    const aliases = alias === undefined ? [] : Array.isArray(alias) ? alias : [alias];
    for (const spelling of [name, kebab, ...aliases]) {
      names.add(spelling);
      if (def.type === "string" || def.type === "enum") takesValue.add(spelling);
      if (def.type === "boolean") names.add(`no-${spelling}`);
    }
  }
  return { names, takesValue };
}

/** citty accepts unknown flags silently; li rejects them with one line naming the flag. */
function rejectUnknownFlags(tokens: string[], args: ArgsDef, where: string): void {
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

/** Pulls the global `--db` out of the tokens before `--`. */
function takeGlobalDb(tokens: string[]): string[] {
  const rest: string[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i]!;
    if (token === "--db") {
      const value = tokens[++i];
      if (value === undefined || value === "") throw new UsageError("flag --db needs a path or a postgres:// URL");
      cliContext.dbFlag = value;
    } else if (token.startsWith("--db=")) {
      const value = token.slice(5);
      if (!value) throw new UsageError("flag --db needs a path or a postgres:// URL");
      cliContext.dbFlag = value;
    } else rest.push(token);
  }
  return rest;
}

export async function main(argv: string[]): Promise<number> {
  const dashdash = argv.indexOf("--");
  const own = dashdash === -1 ? argv : argv.slice(0, dashdash);
  const passthrough = dashdash === -1 ? null : argv.slice(dashdash + 1);
  const tokens = takeGlobalDb(own);
  const wantsHelp = tokens.includes("--help") || tokens.includes("-h");

  let node: Command | Group = TREE;
  const path: string[] = [];
  let i = 0;
  while (isGroup(node)) {
    const word = tokens[i];
    if (word === undefined || word.startsWith("-")) {
      if (path.length === 0 && (word === "--version" || word === "-V")) {
        writeOut(`li ${VERSION}\n`);
        return ExitCode.ok;
      }
      if (wantsHelp || word === undefined) {
        writeOut(groupUsage(path, node));
        return word === undefined && !wantsHelp ? ExitCode.usage : ExitCode.ok;
      }
      throw new UsageError(`unknown flag ${word} for '${["li", ...path].join(" ")}' (see li --help)`);
    }
    const next: Command | Group | undefined = node.commands[word];
    if (!next) throw new UsageError(`unknown command '${[...path, word].join(" ")}' (see ${["li", ...path].join(" ")} --help)`);
    path.push(word);
    node = next;
    i++;
  }
  const command = await node.load();
  const where = `li ${path.join(" ")}`;
  const rest = tokens.slice(i);
  if (wantsHelp) {
    const usage = stripAnsi(await renderUsage({ ...command, meta: { ...(command.meta as object), name: where } }));
    writeOut(usage.trimEnd() + "\n");
    return ExitCode.ok;
  }
  const args = ((typeof command.args === "function" ? await command.args() : await command.args) ?? {}) as ArgsDef;
  rejectUnknownFlags(rest, args, where);
  if (passthrough !== null && !TAKES_COMMAND.has(path.join(" "))) {
    throw new UsageError(`'${where}' takes no command after --`);
  }
  cliContext.passthrough = passthrough;
  const { result } = await runCommand(command, { rawArgs: rest });
  return typeof result === "number" ? result : ExitCode.ok;
}

/** Maps an error to its documented exit code and one line on stderr; never a stack trace for users. */
export function reportError(error: unknown): number {
  const { exit, message } = exitFor(error);
  // The whole message on one line, escaped: it may quote the user's own value (an id, a path, a flag's argument).
  writeNote(stripAnsi(message).trimEnd());
  if (exit === ExitCode.internal && process.env.LI_DEBUG && error instanceof Error) writeErr(`${error.stack}\n`);
  return exit;
}
