// Raw descriptor I/O for the paths that need it (a leg's live output, terminal checks); it loads
// node:fs, so the read-only commands' text output goes through io.ts instead.

import { writeSync } from "node:fs";

/** Writes all of `data` to `fd`, across partial writes and a non-blocking descriptor's EAGAIN; false when the reader went away. */
export function writeAll(fd: number, data: string | Uint8Array): boolean {
  const bytes = typeof data === "string" ? Buffer.from(data) : data;
  let offset = 0;
  while (offset < bytes.length) {
    try {
      offset += writeSync(fd, bytes, offset, bytes.length - offset);
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (code === "EAGAIN") {
        Bun.sleepSync(1);
        continue;
      }
      if (code === "EPIPE") return false; // the reader went away (e.g. `li ls | head`): nothing left to tell it
      throw error;
    }
  }
  return true;
}

export { isTerminal } from "./terminal.ts";
