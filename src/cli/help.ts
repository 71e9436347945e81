// `--help` text for commands and groups, rendered from their declarations (never colour: it is often piped).

import type { LiArgDef, LiCommand } from "./command.ts";
import { isGroup, type Group } from "./tree-node.ts";

/** How a flag is written in help and in errors: `--keep-days=DAYS`, `-r, --resume=BRANCH_ID`, `--no-persist`. */
export function flagSpelling(name: string, def: LiArgDef): string {
  const long = def.type === "boolean" ? (def.default === true ? `--no-${name}` : `--${name}`) : `--${name}=${def.valueHint ?? "VALUE"}`;
  const alias = "alias" in def && def.alias !== undefined ? [def.alias].flat() : [];
  return [...alias.map((a) => `-${a}`), long].join(", ");
}

/** A positional as written in USAGE: its hint, else its name in capitals. */
export function positionalSpelling(name: string, def: LiArgDef): string {
  const word = def.valueHint ?? name.toUpperCase();
  return def.required === false ? `[${word}]` : word;
}

function columns(rows: [string, string][]): string[] {
  const width = Math.max(0, ...rows.map(([left]) => left.length));
  return rows.map(([left, right]) => `  ${left.padEnd(width)}  ${right}`.trimEnd());
}

function examples(list: readonly string[]): string[] {
  return list.length === 0 ? [] : ["", "EXAMPLES:", ...list.map((e) => `  ${e}`)];
}

export function commandHelp(where: string, cmd: LiCommand): string {
  const entries = Object.entries(cmd.args);
  const positionals = entries.filter(([, d]) => d.type === "positional");
  const flags = entries.filter(([, d]) => d.type !== "positional");
  const usage = [where, ...positionals.map(([n, d]) => positionalSpelling(n, d)), ...(flags.length > 0 ? ["[OPTIONS]"] : []), ...(cmd.takesCommand ? ["-- COMMAND…"] : [])];
  const lines = [cmd.description, "", `USAGE: ${usage.join(" ")}`];
  if (positionals.length > 0) lines.push("", "ARGUMENTS:", ...columns(positionals.map(([n, d]) => [positionalSpelling(n, d).replace(/^\[|\]$/g, ""), d.description ?? ""])));
  const flagRows: [string, string][] = flags.map(([n, d]) => [flagSpelling(n, d), d.description ?? ""]);
  flagRows.push(["-h, --help", "print this help"]);
  lines.push("", "OPTIONS:", ...columns(flagRows), ...examples(cmd.examples));
  return lines.join("\n") + "\n";
}

export function groupHelp(path: string[], group: Group, fallback: LiCommand | null): string {
  const lines = [group.description, "", `USAGE: li ${[...path, "<command>"].join(" ")} [--help]`];
  if (fallback) lines.push(`       li ${[...path, "[OPTIONS]"].join(" ")}   (${fallback.description})`);
  lines.push("", "COMMANDS:", ...columns(Object.entries(group.commands).map(([name, node]) => [name, isGroup(node) ? node.description : node.summary])));
  if (fallback) lines.push("", "OPTIONS:", ...columns(Object.entries(fallback.args).filter(([, d]) => d.type !== "positional").map(([n, d]) => [flagSpelling(n, d), d.description ?? ""])));
  if (path.length === 0) {
    lines.push("", "GLOBAL OPTIONS:", ...columns([["--db=PATH|URL", "the ledger (beats LI_DB; default $LI_HOME/state.db)"], ["--version", "print li's version, commit and target (--json for scripts)"], ["-h, --help", "print help"]]));
    lines.push(
      "",
      "ENVIRONMENT:",
      ...columns([
        ["LI_HOME", "li's home (default ~/.li): the ledger state.db and runs/"],
        ["LI_DB", "the ledger: a SQLite file or a postgres:// URL"],
        ["LI_HOST_ID", "this host's id on a shared ledger (default: the machine id; set one per container sharing a machine id)"],
        ["LI_HOST_NAME", "this host's readable name in li show / li ls --json (default: the host name)"],
      ]),
    );
  }
  lines.push(...examples(group.examples));
  return lines.join("\n") + "\n";
}
