// Whether any settings file could apply (§15): a few stats, so a leg without settings never loads the settings module.

import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const SETTINGS = "settings.yaml";

function isFile(p: string): boolean {
  try {
    return fs.statSync(p).isFile();
  } catch {
    return false;
  }
}

/** true when `$LI_HOME/settings.yaml` or a `.li/settings.yaml` at or above `start` exists. */
export function anySettingsFile(start: string, env: Readonly<Record<string, string | undefined>> = process.env): boolean {
  const liHome = env.LI_HOME || path.join(env.HOME ?? os.homedir(), ".li");
  if (isFile(path.join(path.resolve(liHome), SETTINGS))) return true;
  for (let dir = path.resolve(start); ; dir = path.dirname(dir)) {
    if (isFile(path.join(dir, ".li", SETTINGS))) return true;
    if (path.dirname(dir) === dir) return false;
  }
}
