// A replaying watcher killed -9 right after an entry's transaction committed, before its file is removed.
// Usage: bun replay-then-die.ts LI_HOME

import { openLedger } from "../../../src/ledger/open.ts";
import { spoolDirOf } from "../../../src/spool/entry.ts";
import { replaySpool } from "../../../src/spool/replay.ts";
import { pathsForHome } from "../../helpers/backends.ts";

const home = process.argv[2]!;
const ledger = openLedger(pathsForHome(home), { create: false });
await replaySpool(ledger, {
  spoolDir: spoolDirOf(home),
  hooks: {
    afterCommit: () => {
      process.kill(process.pid, "SIGKILL");
    },
  },
});
console.error("replay-then-die: the hook did not run");
process.exit(3);
