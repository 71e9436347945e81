// A real process migrating a PostgreSQL ledger: connects, says "ready", waits for "go" on stdin, then
// migrates and prints one JSON line with what it applied. Argument: the ledger URL.
import { connectPg } from "../../../src/ledger/postgres/client.ts";
import { migratePg } from "../../../src/ledger/postgres/migrate.ts";
import { resolvePgTarget } from "../../../src/ledger/postgres/options.ts";

const [url] = process.argv.slice(2) as [string];
const client = await connectPg(resolvePgTarget(url));
process.stdout.write("ready\n");
for await (const chunk of Bun.stdin.stream()) {
  if (new TextDecoder().decode(chunk).includes("go")) break;
}
try {
  const result = await migratePg(client);
  process.stdout.write(`${JSON.stringify(result)}\n`);
} catch (error) {
  process.stdout.write(`${JSON.stringify({ error: (error as Error).message })}\n`);
  process.exitCode = 1;
} finally {
  await client.close();
}
