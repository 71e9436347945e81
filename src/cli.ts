// The binary's entry: run the command, exit with the code it maps to. A ledger on a server starts
// opening first (cli/early-ledger.ts), so the server's part of connecting overlaps main's loading.
import { openLedgerEarly } from "./cli/early-ledger.ts";
import { closeUnusedEarly, warmEarly } from "./ledger/early-open.ts";
import { entryArgv } from "./legs/supervisor-argv.ts";
import { isWarm, prepareWarm, takeWarmRequest, warmConnectionMs } from "./legs/warm-entry.ts";
import { mark } from "./util/profile.ts";

mark("entry: the runtime started, the entry module loaded");

// A warm supervisor (li watch started it ahead of need): li's supervisor modules load while it waits for
// its request, which then makes it the detached supervisor of a leased run, as if started for that run.
if (isWarm(process.argv.slice(2), process.env)) {
  const loading = Promise.all([import("./cli/main.ts"), import("./cli/commands/agent.ts"), import("./cli/agent-leg.ts"), import("./cli/agent-queue.ts"), import("./schedule/leg.ts"), import("./legs/detach.ts"), import("./cli/context.ts")])
    // Then what the run's setup would otherwise pay once it is handed its run (prepareWarm).
    .then(() => prepareWarm())
    .catch(() => {});
  // A ledger on a server: its session opens while this waits (its LI_DB is the watcher's, as the run's
  // will be), and is given up after a while unused, so an idle watcher holds no connection or slot more.
  await openLedgerEarly(["agent"], { checkPaths: false });
  warmEarly();
  const unused = setTimeout(closeUnusedEarly, warmConnectionMs(process.env));
  if (!(await takeWarmRequest(process.env))) process.exit(0);
  mark("warm: request taken");
  clearTimeout(unused);
  await loading;
}

let argv: string[] | null = null;
let refused: unknown = null;
try {
  // A detached leg's supervisor takes its request from its environment, never its public argv (§18).
  argv = entryArgv(process.argv.slice(2), process.env);
} catch (error) {
  refused = error;
}
if (argv !== null) await openLedgerEarly(argv);
const { main, reportError } = await import("./cli/main.ts");
mark("main loaded");
let code: number;
try {
  if (argv === null) throw refused;
  code = await main(argv);
} catch (error) {
  code = reportError(error);
} finally {
  closeUnusedEarly();
}
process.exitCode = code;
mark("done");
