// Holds the watcher lock of the ledger of the test home argv[2] (its LI_HOME, on the suite's backend) in a
// separate process until killed; prints "held" once it has it. argv[3]: the host (default "this-host").
import { openLedger } from "../../../src/ledger/open.ts";
import { acquireWatchLock } from "../../../src/watch/lock.ts";
import { pathsForHome } from "../backends.ts";

const ledger = openLedger(pathsForHome(process.argv[2]!), { create: false });
const lock = await acquireWatchLock(ledger.backend, process.argv[3] ?? "this-host");
// The handler first: a SIGTERM sent as soon as "held" is read must release the lock, not kill us outright.
process.on("SIGTERM", () => {
  void lock.release().then(() => process.exit(0));
});
process.stdout.write("held\n");
setInterval(() => {}, 1 << 30); // stays alive, holding the lock, until signalled
