// Holds the watcher lock in a separate process until killed; prints "held" once it has it.
import { acquireWatchLock } from "../../../src/watch/lock.ts";

const lock = acquireWatchLock(process.argv[2]!);
process.stdout.write("held\n");
process.on("SIGTERM", () => {
  lock.release();
  process.exit(0);
});
setInterval(() => {}, 1 << 30);
