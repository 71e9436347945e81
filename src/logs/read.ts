// Reading a leg's stream file: opened without following a final symlink and without blocking (the
// command could have replaced it — it knows its run directory), checked to be a regular file, then
// read in bounded chunks from an offset, so a huge log never sits in memory and a growing one can be
// followed.

import fs from "node:fs";

const CHUNK = 64 * 1024;

export class LogFileError extends Error {}

export class StreamReader {
  private constructor(
    readonly file: string,
    private readonly fd: number,
    /** The next byte to read. */
    public offset: number,
  ) {}

  /** Opens `file`; a symlink, FIFO, device or directory is refused with one line naming it. */
  static open(file: string): StreamReader {
    let fd: number;
    try {
      fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      throw new LogFileError(code === "ELOOP" ? `${file} is a symbolic link; not read` : `${file}: cannot open (${code ?? (error as Error).message})`);
    }
    if (!fs.fstatSync(fd).isFile()) {
      fs.closeSync(fd);
      throw new LogFileError(`${file} is not a regular file; not read`);
    }
    return new StreamReader(file, fd, 0);
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
