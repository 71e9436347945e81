// Trusted project settings (SPEC §18): `$LI_HOME/trusted` records a settings file's real path and content hash.
// A repository's `.li/settings.yaml` may run a program (`notify.on_terminal`) only once its owner said so, and
// only while its content is what was trusted.

import fs from "node:fs";
import path from "node:path";
import { writeFileAtomic } from "../util/atomic-file.ts";
import { readUntrustedFile } from "../util/untrusted-file.ts";

export const TRUST_FILE = "trusted";
const TRUST_MODE = 0o600;
const HOME_MODE = 0o700;

export interface TrustEntry {
  /** The file's real path (symlinked directories resolved) when it was trusted. */
  readonly path: string;
  /** sha256 of its content, hex. */
  readonly sha256: string;
  /** Unix seconds. */
  readonly trusted_at: number;
}

/** What li knows of one file: trusted with this content, trusted once but changed since, or never trusted. */
export type TrustState = "trusted" | "changed" | "untrusted";

/** sha256 of a settings file's text, as recorded and as checked. */
export function contentHash(text: string): string {
  return new Bun.CryptoHasher("sha256").update(text).digest("hex");
}

function storePath(liHome: string): string {
  return path.join(path.resolve(liHome), TRUST_FILE);
}

/** The recorded entries; a missing store is empty, and lines that are not entries are skipped (the store is li's own). */
export function readTrustStore(liHome: string): TrustEntry[] {
  const read = readUntrustedFile(storePath(liHome));
  if (!read.ok) return [];
  const entries: TrustEntry[] = [];
  for (const line of read.text.split("\n")) {
    if (line.trim() === "") continue;
    try {
      const e = JSON.parse(line) as Partial<TrustEntry>;
      if (typeof e.path === "string" && typeof e.sha256 === "string" && typeof e.trusted_at === "number") entries.push({ path: e.path, sha256: e.sha256, trusted_at: e.trusted_at });
    } catch {
      // A torn line cannot be an entry: skipping it only ever trusts less.
    }
  }
  return entries;
}

function writeTrustStore(liHome: string, entries: readonly TrustEntry[]): void {
  fs.mkdirSync(path.resolve(liHome), { recursive: true, mode: HOME_MODE });
  writeFileAtomic(storePath(liHome), entries.map((e) => `${JSON.stringify(e)}\n`).join(""), TRUST_MODE);
}

/** The real path of `file` as the store names it: its directory resolved, the file name itself kept (never followed). */
export function trustKey(file: string): string {
  const absolute = path.resolve(file);
  let dir = path.dirname(absolute);
  try {
    dir = fs.realpathSync(dir);
  } catch {
    // A directory that is gone: the path as given still names the entry to revoke.
  }
  return path.join(dir, path.basename(absolute));
}

/** Whether the file whose text is `text` is trusted as it stands. */
export function trustState(liHome: string, file: string, text: string): TrustState {
  const key = trustKey(file);
  const entry = readTrustStore(liHome).find((e) => e.path === key);
  if (!entry) return "untrusted";
  return entry.sha256 === contentHash(text) ? "trusted" : "changed";
}

/** Records `file` with its current content; throws an Error naming the file when it cannot be read as settings are. */
export function trustFile(liHome: string, file: string, now: number): TrustEntry {
  const key = trustKey(file);
  // Read exactly as the settings loader will: a symlink, a FIFO or an oversize file is refused here too.
  const read = readUntrustedFile(key);
  if (!read.ok) throw new Error(read.missing ? `${key} does not exist` : `${key} ${read.problem}`);
  const entry: TrustEntry = { path: key, sha256: contentHash(read.text), trusted_at: now };
  writeTrustStore(liHome, [...readTrustStore(liHome).filter((e) => e.path !== key), entry]);
  return entry;
}

/** Removes the entry for `file`; false when it was not trusted. */
export function revokeTrust(liHome: string, file: string): boolean {
  const key = trustKey(file);
  const entries = readTrustStore(liHome);
  const kept = entries.filter((e) => e.path !== key);
  if (kept.length === entries.length) return false;
  writeTrustStore(liHome, kept);
  return true;
}

/** The exact command that trusts `file`, quoted for a POSIX shell when it needs to be. */
export function trustCommand(file: string): string {
  const key = trustKey(file);
  return `li trust ${/^[A-Za-z0-9_./:@%+=,-]+$/.test(key) ? key : `'${key.replace(/'/g, `'\\''`)}'`}`;
}
