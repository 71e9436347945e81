// Writing a whole file so that a reader sees the old content or the new, never half: temp file, fsync, rename.

import fs from "node:fs";

export interface AtomicWriteOptions {
  /**
   * false: temp file and rename without the fsync. Readers still see the old content or the new while
   * the machine runs; only a power loss may leave the file empty. For files another record makes durable.
   */
  fsync?: boolean;
}

/** Writes `text` to `target` atomically with `mode` (given explicitly, so the umask never widens it). */
export function writeFileAtomic(target: string, text: string, mode: number, options: AtomicWriteOptions = {}): void {
  const temp = `${target}.${process.pid}.${crypto.randomUUID().slice(0, 8)}.tmp`;
  const fd = fs.openSync(temp, "wx", mode);
  try {
    try {
      fs.writeSync(fd, text);
      if (options.fsync !== false) fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(temp, target);
  } catch (err) {
    fs.rmSync(temp, { force: true });
    throw err;
  }
}
