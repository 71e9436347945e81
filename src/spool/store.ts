// The spool directory `$LI_HOME/spool/` (SPEC §17): entries written atomically, listed oldest first,
// removed once the ledger holds them. Owner-only: the directory 0700, each entry 0600.

import fs from "node:fs";
import path from "node:path";
import { writeFileAtomic } from "../util/atomic-file.ts";
import { ENTRY_ID } from "./entry.ts";

export { spoolDirOf } from "./entry.ts";

/** Where an entry lives. */
export function entryPath(dir: string, id: string): string {
  return path.join(dir, `${id}.json`);
}

/**
 * Writes the entry durably: temp file, fsync, rename, then fsync of the directory so the rename
 * survives a crash too. Returns the file. Throws when the disk refuses (the caller reports it).
 */
export function writeEntry(dir: string, id: string, text: string): string {
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  fs.chmodSync(dir, 0o700);
  const file = entryPath(dir, id);
  writeFileAtomic(file, text, 0o600);
  const fd = fs.openSync(dir, "r");
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  return file;
}

/** Entry ids waiting in `dir`, oldest first; names li did not make are left alone. A missing directory holds none. */
export function listEntryIds(dir: string): string[] {
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return [];
    throw error;
  }
  return names
    .filter((n) => n.endsWith(".json") && ENTRY_ID.test(n.slice(0, -5)))
    .map((n) => n.slice(0, -5))
    .sort();
}

/** Removes an entry the ledger now holds (or that was refused and set aside). */
export function removeEntry(dir: string, id: string): void {
  fs.rmSync(entryPath(dir, id), { force: true });
}

/** Moves an entry li will not apply out of the way (`<id>.json.rejected`), so it is reported once, not every pass. */
export function setAside(dir: string, id: string): string {
  const target = `${entryPath(dir, id)}.rejected`;
  fs.renameSync(entryPath(dir, id), target);
  return target;
}
