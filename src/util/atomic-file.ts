// Writing a whole file so that a reader sees the old content or the new, never half: temp file, fsync, rename.

import fs from "node:fs";

/** Writes `text` to `target` atomically with `mode` (given explicitly, so the umask never widens it). */
export function writeFileAtomic(target: string, text: string, mode: number): void {
  const temp = `${target}.${process.pid}.${crypto.randomUUID().slice(0, 8)}.tmp`;
  const fd = fs.openSync(temp, "wx", mode);
  try {
    try {
      fs.writeSync(fd, text);
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(temp, target);
  } catch (err) {
    fs.rmSync(temp, { force: true });
    throw err;
  }
}
