// The binary's entry: run the command, exit with the code it maps to.
import { main, reportError } from "./cli/main.ts";

let code: number;
try {
  code = await main(process.argv.slice(2));
} catch (error) {
  code = reportError(error);
}
process.exitCode = code;
