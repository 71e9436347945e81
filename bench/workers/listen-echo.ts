// The floor of bench/pg-wake.ts: a separate process subscribed with Bun's `sql.listen`, printing each
// notice's payload as one line — the least a waiter woken by LISTEN/NOTIFY can do.
import { SQL } from "bun";

const [url, channel] = process.argv.slice(2) as [string, string];
const sql = new SQL({ url, max: 1 });
await sql.listen(channel, (payload) => process.stdout.write(`${payload}\n`));
process.stdout.write("ready\n");
