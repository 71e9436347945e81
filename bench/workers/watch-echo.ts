// The floor of bench/wake.ts: a separate process told of a file change by fs.watch, printing the file's new
// content as one line — the least a waiter woken by file events can do.
import { readFileSync, watch } from "node:fs";
import { join } from "node:path";

const [dir] = process.argv.slice(2) as [string];
const file = join(dir, "poke");
let last = "";
watch(dir, (_event, name) => {
  if (name !== "poke") return;
  let value: string;
  try {
    value = readFileSync(file, "utf8");
  } catch {
    return;
  }
  // One line per new value: a write fires several events.
  if (value === "" || value === last) return;
  last = value;
  process.stdout.write(`${value}\n`);
});
process.stdout.write("ready\n");
