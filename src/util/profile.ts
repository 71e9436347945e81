// Marks on one clock for the hot-path profile (bench/agent-profile.ts, docs/benchmarks.md). With
// LI_PROFILE_FILE set, a process appends its marks (name, ms since the process started, ms of CPU the
// process used so far, all its threads) there as one JSON line when it exits; unset, mark() does
// nothing and nothing is written.

const file = process.env.LI_PROFILE_FILE;
const marks: [string, number, number][] = [];

/** Notes that the process reached `name` now. */
export function mark(name: string): void {
  if (!file) return;
  const cpu = process.cpuUsage();
  marks.push([name, performance.now(), (cpu.user + cpu.system) / 1000]);
}

if (file) {
  process.on("exit", () => {
    mark("exit: the event loop drained");
    try {
      // node:fs only here: the entry that imports this module loads nothing for it.
      (require("node:fs") as typeof import("node:fs")).appendFileSync(file, `${JSON.stringify({ pid: process.pid, origin: performance.timeOrigin, marks })}\n`);
    } catch {
      // A profile that cannot be written is no failure of the command.
    }
  });
}
