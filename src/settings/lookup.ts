// Whether any settings file could apply (§15): a few stats, so a leg without settings never loads the settings module.

import fs from "node:fs";
import path from "node:path";
import { checkOwnership, ownerName } from "../util/ownership.ts";

export const SETTINGS_FILE = "settings.yaml";
/** The project directory whose settings file is looked for at or above the start. */
export const PROJECT_DIR = ".li";

/** Anything at the path (lstat): a FIFO or symlink there is the loader's to refuse with a warning, not to skip in silence. */
function present(p: string): boolean {
  try {
    fs.lstatSync(p);
    return true;
  } catch {
    return false;
  }
}

/** true when `<liHome>/settings.yaml` or a `.li/settings.yaml` at or above `start` exists. */
export function anySettingsFile(start: string, liHome: string): boolean {
  if (present(path.join(path.resolve(liHome), SETTINGS_FILE))) return true;
  for (let dir = path.resolve(start); ; dir = path.dirname(dir)) {
    if (present(path.join(dir, PROJECT_DIR, SETTINGS_FILE))) return true;
    if (path.dirname(dir) === dir) return false;
  }
}

/**
 * The nearest `.li/settings.yaml` at or above `start`, skipping the global file itself (`~/.li` is also a
 * project dir of `~`). Another user could have planted one above the project (§18): a `.li` of another
 * owner, or one others may write, is skipped with a warning, and the walk stops at a directory of another
 * owner (a `/tmp/.li` is skipped; nothing above `/home/mallory` is read when alice works below it).
 */
export function findProjectFile(start: string, globalFile: string, warn: (line: string) => void = () => {}): string | null {
  const globalReal = realOrSelf(globalFile);
  const uid = process.getuid?.() ?? 0;
  for (let dir = path.resolve(start); ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, PROJECT_DIR, SETTINGS_FILE);
    const owner = ownerOf(dir);
    if (owner !== null && owner !== uid && owner !== 0) {
      if (present(candidate)) warn(`settings ${candidate}: not read: ${dir} belongs to ${ownerName(owner)}, and li does not look for settings in or above another user's directory`);
      return null;
    }
    const projectDir = path.join(dir, PROJECT_DIR);
    const verdict = checkOwnership(projectDir, "the settings directory");
    if (!verdict.ok) {
      if (present(candidate)) warn(`settings ${candidate}: not read: ${verdict.problem}`);
    } else {
      if (verdict.warning !== undefined && present(candidate)) warn(verdict.warning);
      if (present(candidate) && realOrSelf(candidate) !== globalReal) return candidate;
    }
    if (path.dirname(dir) === dir) return null;
  }
}

function ownerOf(dir: string): number | null {
  try {
    return fs.statSync(dir).uid;
  } catch {
    return null;
  }
}

function realOrSelf(p: string): string {
  try {
    return fs.realpathSync(p);
  } catch {
    return p;
  }
}
