// Whether any settings file could apply (§15): a few stats, so a leg without settings never loads the settings module.

import fs from "node:fs";
import path from "node:path";

export const SETTINGS_FILE = "settings.yaml";
/** The project directory whose settings file is looked for at or above the start. */
export const PROJECT_DIR = ".li";

function isFile(p: string): boolean {
  try {
    return fs.statSync(p).isFile();
  } catch {
    return false;
  }
}

/** true when `<liHome>/settings.yaml` or a `.li/settings.yaml` at or above `start` exists. */
export function anySettingsFile(start: string, liHome: string): boolean {
  if (isFile(path.join(path.resolve(liHome), SETTINGS_FILE))) return true;
  for (let dir = path.resolve(start); ; dir = path.dirname(dir)) {
    if (isFile(path.join(dir, PROJECT_DIR, SETTINGS_FILE))) return true;
    if (path.dirname(dir) === dir) return false;
  }
}
