// `li trust [PATH]`, `li trust --list [--json]`, `li trust --revoke PATH` (SPEC §18): which project settings files may run a program.
import fs from "node:fs";
import path from "node:path";
import { command } from "../command.ts";
import { findProjectFile, PROJECT_DIR, SETTINGS_FILE } from "../../settings/lookup.ts";
import { contentHash, readTrustStore, revokeTrust, trustFile, trustKey, type TrustEntry } from "../../settings/trust.ts";
import { UsageError } from "../../util/errors.ts";
import { readUntrustedFile } from "../../util/untrusted-file.ts";
import { modeText, ownerName } from "../../util/ownership.ts";
import { requireOwnedPaths } from "../owned-paths.ts";
import { table, writeJson } from "../output.ts";
import { cliPaths } from "../paths.ts";
import { writeNote, writeOut } from "../io.ts";
import { safeText } from "../../util/text.ts";

export default command({
  description:
    "Trust a project's .li/settings.yaml so its notify.on_terminal may run a program: its real path and content hash are recorded in $LI_HOME/trusted, and a changed file is untrusted again ($LI_HOME/settings.yaml is always trusted). PATH is the file or a project directory (default: the nearest .li/settings.yaml at or above the working directory). Exit 1 when --revoke names a file that is not trusted",
  examples: ["li trust ~/src/app", "li trust --list --json"],
  ledger: "none",
  args: {
    path: { type: "positional", valueHint: "PATH", required: false, description: "a settings file, or a project directory holding .li/settings.yaml", complete: "files" },
    list: { type: "boolean", description: "list the trusted files: trusted, changed or missing" },
    revoke: { type: "string", valueHint: "PATH", description: "forget the trust of PATH", complete: "files" },
    json: { type: "boolean", description: "with --list: one JSON array" },
  },
  async run({ args }) {
    const paths = cliPaths();
    const liHome = paths.home;
    // The store lives in LI_HOME: one another user could write would let them trust their own files (§18).
    await requireOwnedPaths(paths);
    const positional = args._.map(String);
    if (positional.length > 1) throw new UsageError(`li trust takes one PATH; unexpected '${positional[1]}'`);
    const modes = [args.list === true, args.revoke !== undefined, positional.length > 0].filter(Boolean).length;
    if (modes > 1) throw new UsageError("li trust: give a PATH, --list or --revoke PATH, one at a time");
    if (args.json === true && args.list !== true) throw new UsageError("li trust: --json goes with --list");
    if (args.list === true) return list(liHome, args.json === true);
    if (args.revoke !== undefined) {
      if (args.revoke === "") throw new UsageError("--revoke: an empty path");
      const key = trustKey(args.revoke);
      if (!revokeTrust(liHome, args.revoke)) {
        writeNote(`${key} is not trusted`);
        return 1;
      }
      // Paths are the user's or a repository's: a directory name can hold ESC or a newline (§18).
      writeOut(`revoked ${safeText(key)}\n`);
      return 0;
    }
    const file = settingsFileFor(positional[0], liHome);
    // Whose file it is and what it sets, said with the trust: a planted file is seen for what it is.
    const described = describeSettingsFile(file);
    let entry: TrustEntry;
    try {
      entry = trustFile(liHome, file, Date.now() / 1000);
    } catch (error) {
      throw new UsageError(`li trust: ${(error as Error).message}`);
    }
    writeOut(`trusted ${safeText(entry.path)} (sha256 ${entry.sha256.slice(0, 12)}…)${described}\n`);
    return 0;
  },
});

/** `: owned by alice (uid 1000), mode 0644; sets notify.on_terminal ["./notify.sh","{status}"], agent.timeout "1h"`, escaped. */
function describeSettingsFile(file: string): string {
  const read = readUntrustedFile(file);
  if (!read.ok) return "";
  let sets = "sets nothing li knows";
  try {
    const document = Bun.YAML.parse(read.text);
    if (typeof document === "object" && document !== null && !Array.isArray(document)) {
      const keys = flatten(document as Record<string, unknown>);
      if (keys.length > 0) sets = `sets ${keys.map(([key, value]) => `${key} ${cut(JSON.stringify(value) ?? "null")}`).join(", ")}`;
    }
  } catch {
    sets = "is not valid YAML";
  }
  return safeText(`: owned by ${ownerName(read.stat.uid)}, mode ${modeText(read.stat.mode)}; ${sets}`);
}

/** `{watch: {sweep_interval: 30}}` as `[["watch.sweep_interval", 30]]`; a handler's mapping is kept whole. */
function flatten(document: Record<string, unknown>): [string, unknown][] {
  return Object.entries(document).flatMap(([name, value]): [string, unknown][] =>
    name.includes(".") || typeof value !== "object" || value === null || Array.isArray(value)
      ? [[name, value]]
      : Object.entries(value as Record<string, unknown>).map(([sub, subValue]): [string, unknown] => [`${name}.${sub}`, subValue]),
  );
}

function cut(text: string): string {
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}

/** The file PATH names: the file itself, or a directory's .li/settings.yaml; without PATH the nearest project file. */
function settingsFileFor(given: string | undefined, liHome: string): string {
  if (given === undefined) {
    const found = findProjectFile(process.cwd(), path.join(path.resolve(liHome), SETTINGS_FILE), writeNote);
    if (found === null) throw new UsageError(`li trust: no ${PROJECT_DIR}/${SETTINGS_FILE} at or above ${process.cwd()}; give its PATH`);
    return found;
  }
  if (given === "") throw new UsageError("li trust: an empty path");
  const absolute = path.resolve(given);
  let isDir = false;
  try {
    isDir = fs.lstatSync(absolute).isDirectory();
  } catch {
    throw new UsageError(`li trust: ${absolute} does not exist`);
  }
  return isDir ? path.join(absolute, PROJECT_DIR, SETTINGS_FILE) : absolute;
}

function list(liHome: string, json: boolean): number {
  const rows = readTrustStore(liHome).map((e) => ({ ...e, state: currentState(e) }));
  if (json) writeJson(rows);
  else if (rows.length === 0) writeNote("nothing trusted yet");
  else writeOut(table([["STATE", "SHA256", "PATH"], ...rows.map((r) => [r.state, r.sha256.slice(0, 12), r.path])]));
  return 0;
}

/** trusted: the file still has the recorded content; changed: it does not (it is untrusted until trusted again); missing: gone. */
function currentState(entry: TrustEntry): "trusted" | "changed" | "missing" {
  const read = readUntrustedFile(entry.path);
  if (!read.ok) return read.missing ? "missing" : "changed";
  return contentHash(read.text) === entry.sha256 ? "trusted" : "changed";
}
