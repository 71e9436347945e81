// The binary's entry: run the command, exit with the code it maps to. A ledger on a server starts
// opening first (cli/early-ledger.ts), so the server's part of connecting overlaps main's loading.
import { openLedgerEarly } from "./cli/early-ledger.ts";
import { closeUnusedEarly } from "./ledger/early-open.ts";

await openLedgerEarly(process.argv.slice(2));
const { main, reportError } = await import("./cli/main.ts");
let code: number;
try {
  code = await main(process.argv.slice(2));
} catch (error) {
  code = reportError(error);
} finally {
  closeUnusedEarly();
}
process.exitCode = code;
