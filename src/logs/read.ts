// Reading a leg's stream file: opened like every file someone else could have made (util/untrusted-file.ts: no final symlink, no blocking; the
// command could have replaced it — it knows its run directory), checked to be a regular file, then
// read in bounded chunks from an offset, so a huge log never sits in memory and a growing one can be
// followed.

import fs from "node:fs";
import { openUntrustedFile } from "../util/untrusted-file.ts";

const CHUNK = 64 * 1024;

export class LogFileError extends Error {
  constructor(
    message: string,
    /** Nothing there yet (a leg writes its stream file once its command starts). */
    readonly missing: boolean,
  ) {
    super(message);
  }
}

export class StreamReader {
  private constructor(
    readonly file: string,
    private readonly fd: number,
    /** The next byte to read. */
    public offset: number,
  ) {}

  /** Opens `file` as every file someone else could have made (§18); a symlink, FIFO, device or directory is refused with one line naming it. */
  static open(file: string): StreamReader {
    const opened = openUntrustedFile(file);
    if (!opened.ok) throw new LogFileError(opened.missing ? `${file} does not exist` : `${file} ${opened.problem}; not read`, opened.missing);
    return new StreamReader(file, opened.fd, 0);
  }

  /** Starts at the last `lines` lines (a final line without its newline counts as one). */
  seekToLastLines(lines: number): void {
    const size = fs.fstatSync(this.fd).size;
    if (lines <= 0) {
      this.offset = size;
      return;
    }
    const buffer = Buffer.alloc(CHUNK);
    let end = size;
    let newlines = 0;
    // A newline ending the file closes the last line; it does not start another.
    let skipFinal = true;
    while (end > 0) {
      const start = Math.max(0, end - CHUNK);
      const n = fs.readSync(this.fd, buffer, 0, end - start, start);
      for (let i = n - 1; i >= 0; i--) {
        if (buffer[i] !== 0x0a) {
          skipFinal = false;
          continue;
        }
        if (skipFinal) {
          skipFinal = false;
          continue;
        }
        if (++newlines === lines) {
          this.offset = start + i + 1;
          return;
        }
      }
      end = start;
    }
    this.offset = 0;
  }

  /** Hands everything from the offset to the current end to `sink`, chunk by chunk (each chunk is valid only during the call); returns the bytes read. */
  drain(sink: (bytes: Uint8Array) => void): number {
    const buffer = Buffer.alloc(CHUNK);
    let total = 0;
    for (;;) {
      const n = fs.readSync(this.fd, buffer, 0, CHUNK, this.offset);
      if (n <= 0) return total;
      this.offset += n;
      total += n;
      sink(buffer.subarray(0, n));
    }
  }

  close(): void {
    fs.closeSync(this.fd);
  }
}
