// Holds the watcher lock in a separate process until killed; prints "held" once it has it.
import { acquireWatchLock } from "../../../src/watch/lock.ts";

const lock = acquireWatchLock(process.argv[2]!);
// The handler first: a SIGTERM sent as soon as "held" is read must release the lock, not kill us outright.
process.on("SIGTERM", () => {
  lock.release();
  process.exit(0);
});
process.stdout.write("held\n");
setInterval(() => {}, 1 << 30); // stays alive, holding the lock, until signalled
