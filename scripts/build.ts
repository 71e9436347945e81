// Builds dist/li: one standalone binary (flags from STACK.md: bytecode, ESM, no autoloaded .env/bunfig).
import { $ } from "bun";
import { join } from "node:path";

const root = join(import.meta.dir, "..");
const outfile = join(root, "dist/li");
await $`bun build --compile --bytecode --splitting --minify-syntax --minify-whitespace --format=esm --no-compile-autoload-dotenv --no-compile-autoload-bunfig ${join(root, "src/cli.ts")} --outfile ${outfile}`.quiet();
console.log(`built ${outfile}`);
