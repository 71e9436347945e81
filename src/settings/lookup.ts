// Whether any settings file could apply (§15): a few stats, so a leg without settings never loads the settings module.

import fs from "node:fs";
import path from "node:path";

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

/** The nearest `.li/settings.yaml` at or above `start`, skipping the global file itself (`~/.li` is also a project dir of `~`). */
export function findProjectFile(start: string, globalFile: string): string | null {
  const globalReal = realOrSelf(globalFile);
  for (let dir = path.resolve(start); ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, PROJECT_DIR, SETTINGS_FILE);
    if (present(candidate) && realOrSelf(candidate) !== globalReal) return candidate;
    if (path.dirname(dir) === dir) return null;
  }
}

function realOrSelf(p: string): string {
  try {
    return fs.realpathSync(p);
  } catch {
    return p;
  }
}
