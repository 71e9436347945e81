// Whether a descriptor is a terminal, without a static `node:*` import: the read-only views ask only
// when colour or progress output is otherwise allowed, so a piped `li show` never loads node:fs.

/**
 * Read from /proc (li runs on Linux): importing node:tty measured ~3 ms of start-up in the compiled
 * binary. A terminal is a pts, a tty or the console; /dev/null, pipes and files are not.
 */
export function isTerminal(fd: number): boolean {
  try {
    const { readlinkSync } = require("node:fs") as typeof import("node:fs");
    return /^\/dev\/(pts\/\d+|tty\w*|console)$/.test(readlinkSync(`/proc/self/fd/${fd}`));
  } catch {
    return false;
  }
}
