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

/**
 * The width rows must fit: $COLUMNS when it is a positive whole number, else the terminal's own width
 * when stdout is one (asked of process.stdout only then: its first touch costs ~10 ms), else null
 * (a pipe or a file: nothing to fit).
 */
export function terminalWidth(fd = 1): number | null {
  const fromEnv = Number(process.env.COLUMNS);
  if (Number.isInteger(fromEnv) && fromEnv > 0) return fromEnv;
  if (!isTerminal(fd)) return null;
  const columns = (fd === 2 ? process.stderr : process.stdout).columns;
  return typeof columns === "number" && columns > 0 ? columns : null;
}
