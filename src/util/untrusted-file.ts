// The one bounded read of a file someone else could have made (SPEC §18): no final symlink, no blocking, a regular file, at most a bound.

import fs from "node:fs";

/** The bound for escalation files, settings, playbooks, profiles, manifests and branch snapshots: 1 MiB. */
export const UNTRUSTED_FILE_LIMIT = 1024 * 1024;

export type UntrustedRead =
  | { ok: true; text: string; stat: fs.Stats }
  /** Nothing there (or a path through a non-directory): the caller's "absent". */
  | { ok: false; missing: true }
  /** Something is there but li will not read it; `problem` says why in a few words, without the content. */
  | { ok: false; missing: false; problem: string };

// O_NOFOLLOW: a final symlink (to /dev/zero, to a secret) fails with ELOOP instead of being followed.
// O_NONBLOCK: a FIFO opens at once instead of blocking open() until a writer appears; fstat then refuses it.
const OPEN_FLAGS = fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK | fs.constants.O_NOCTTY;

export type UntrustedOpen = { ok: true; fd: number; stat: fs.Stats } | Exclude<UntrustedRead, { ok: true }>;

/**
 * Opens `file` for reading the same way, without reading it: for a caller that streams a file it may
 * not hold whole (`li logs` on a leg's stream file). The caller closes `fd`.
 */
export function openUntrustedFile(file: string): UntrustedOpen {
  let fd: number;
  try {
    fd = fs.openSync(file, OPEN_FLAGS);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return { ok: false, missing: true };
    if (code === "ELOOP") return { ok: false, missing: false, problem: "is a symbolic link (not followed)" };
    return { ok: false, missing: false, problem: `cannot be read (${code ?? (error as Error).message})` };
  }
  try {
    const stat = fs.fstatSync(fd);
    if (stat.isFile()) return { ok: true, fd, stat };
    fs.closeSync(fd);
    return { ok: false, missing: false, problem: `is ${kindOf(stat)}, not a regular file` };
  } catch (error) {
    fs.closeSync(fd);
    return { ok: false, missing: false, problem: `cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})` };
  }
}

/** Reads `file` as UTF-8 when it is a regular file of at most `limit` bytes; never follows a final symlink, never blocks. */
export function readUntrustedFile(file: string, limit: number = UNTRUSTED_FILE_LIMIT): UntrustedRead {
  const opened = openUntrustedFile(file);
  if (!opened.ok) return opened;
  const { fd, stat } = opened;
  try {
    if (stat.size > limit) return { ok: false, missing: false, problem: `is larger than ${formatBytes(limit)} (${stat.size} bytes)` };
    // Read up to one byte past the bound: a file that grows after fstat is still refused, never read whole.
    const buffer = Buffer.alloc(Math.min(limit, Math.max(stat.size, 64 * 1024)) + 1);
    const chunks: Buffer[] = [];
    let length = 0;
    for (;;) {
      const n = fs.readSync(fd, buffer, 0, Math.min(buffer.length, limit + 1 - length), null);
      if (n === 0) break;
      chunks.push(Buffer.from(buffer.subarray(0, n)));
      length += n;
      if (length > limit) return { ok: false, missing: false, problem: `is larger than ${formatBytes(limit)}` };
    }
    return { ok: true, text: Buffer.concat(chunks, length).toString("utf8"), stat };
  } catch (error) {
    return { ok: false, missing: false, problem: `cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})` };
  } finally {
    fs.closeSync(fd);
  }
}

function kindOf(stat: fs.Stats): string {
  if (stat.isDirectory()) return "a directory";
  if (stat.isFIFO()) return "a FIFO";
  if (stat.isCharacterDevice() || stat.isBlockDevice()) return "a device";
  if (stat.isSocket()) return "a socket";
  return "not a plain file";
}

function formatBytes(bytes: number): string {
  return bytes % (1024 * 1024) === 0 ? `${bytes / (1024 * 1024)} MiB` : bytes % 1024 === 0 ? `${bytes / 1024} KiB` : `${bytes} bytes`;
}
