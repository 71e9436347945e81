// The floors bench/agent.ts measures in its own rounds: what any leg built on this stack pays before li's
// own code, in the shape li has (one process that opens the ledger, runs the command and closes the
// ledger) and in the shape it does not have (a small client of a resident per-host process that holds
// the ledger open). Each is a compiled binary made with dist/li's flags (floor.ts).

import { Database } from "bun:sqlite";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { compileFloor } from "./floor.ts";

/** The rows a floor writes: a leg's row inserted before the spawn and finished after it. */
const LEGS_TABLE = "CREATE TABLE legs (id TEXT PRIMARY KEY, status TEXT NOT NULL, started_at INTEGER NOT NULL, ended_at INTEGER)";

/**
 * One process doing a durable leg's irreducible work with bun:sqlite: open the WAL ledger, commit the
 * leg's row, spawn the command with its output piped and wait for it, commit its end, close (the last
 * connection checkpoints: the same fsyncs li's close pays).
 */
const ONE_PROCESS = `import { Database } from "bun:sqlite";
const db = new Database(process.env.FLOOR_DB, { strict: true });
db.run("PRAGMA busy_timeout = 5000");
db.run("PRAGMA synchronous = NORMAL");
const id = crypto.randomUUID();
db.transaction(() => db.run("INSERT INTO legs (id, status, started_at) VALUES (?, 'running', ?)", [id, Date.now()])).immediate();
const child = Bun.spawn([process.env.FLOOR_TRUE], { stdin: "ignore", stdout: "pipe", stderr: "pipe" });
await new Response(child.stdout).text();
await child.exited;
db.transaction(() => db.run("UPDATE legs SET status = 'completed', ended_at = ? WHERE id = ?", [Date.now(), id])).immediate();
db.close();
`;

/** The client side of the resident shape: one request before the spawn, one after, over a unix socket. */
const RESIDENT_CLIENT = `let buffered = "";
let waiting = null;
const socket = await Bun.connect({
  unix: process.env.FLOOR_SOCKET,
  socket: {
    data(_s, chunk) {
      buffered += chunk.toString();
      const nl = buffered.indexOf("\\n");
      if (nl >= 0 && waiting) { buffered = buffered.slice(nl + 1); const done = waiting; waiting = null; done(); }
    },
  },
});
const ask = (line) => new Promise((resolve) => { waiting = resolve; socket.write(line + "\\n"); });
const id = crypto.randomUUID();
await ask("setup " + id);
const child = Bun.spawn([process.env.FLOOR_TRUE], { stdin: "ignore", stdout: "pipe", stderr: "pipe" });
await new Response(child.stdout).text();
await child.exited;
await ask("final " + id);
socket.end();
`;

/** The resident process: holds the ledger open and commits each request (run by bun, not timed). */
const RESIDENT_SERVER = `import { Database } from "bun:sqlite";
const db = new Database(process.env.FLOOR_DB, { strict: true });
db.run("PRAGMA busy_timeout = 5000");
db.run("PRAGMA synchronous = NORMAL");
const insert = db.prepare("INSERT INTO legs (id, status, started_at) VALUES (?, 'running', ?)");
const finish = db.prepare("UPDATE legs SET status = 'completed', ended_at = ? WHERE id = ?");
const pending = new Map();
Bun.listen({
  unix: process.env.FLOOR_SOCKET,
  socket: {
    data(socket, chunk) {
      let text = (pending.get(socket) ?? "") + chunk.toString();
      for (let nl = text.indexOf("\\n"); nl >= 0; nl = text.indexOf("\\n")) {
        const [verb, id] = text.slice(0, nl).split(" ");
        text = text.slice(nl + 1);
        if (verb === "setup") db.transaction(() => insert.run(id, Date.now())).immediate();
        else db.transaction(() => finish.run(Date.now(), id)).immediate();
        socket.write("ok\\n");
      }
      pending.set(socket, text);
    },
    close(socket) { pending.delete(socket); },
  },
});
console.log("ready");
`;

export interface AgentFloors {
  hello: string;
  oneProcess: string;
  residentClient: string;
  /** FLOOR_DB, FLOOR_SOCKET and FLOOR_TRUE for the floors' processes. */
  env: Record<string, string>;
  stop(): void;
}

/** Compiles the floors into `dir`, creates their ledgers and starts the resident process. */
export async function agentFloors(dir: string, trueBin: string): Promise<AgentFloors> {
  const makeLedger = (path: string) => {
    const db = new Database(path, { create: true });
    db.run("PRAGMA journal_mode = WAL");
    db.run(LEGS_TABLE);
    db.close();
  };
  const oneProcessDb = join(dir, "floor-one-process.db");
  const residentDb = join(dir, "floor-resident.db");
  makeLedger(oneProcessDb);
  makeLedger(residentDb);
  const socketPath = join(dir, "floor-resident.sock");
  const serverFile = join(dir, "floor-resident-server.ts");
  writeFileSync(serverFile, RESIDENT_SERVER);
  const server = Bun.spawn([process.execPath, serverFile], { env: { ...process.env, FLOOR_DB: residentDb, FLOOR_SOCKET: socketPath }, stdout: "pipe", stderr: "inherit" });
  const ready = await server.stdout.getReader().read();
  if (!new TextDecoder().decode(ready.value).startsWith("ready")) throw new Error("the resident floor process did not start");
  return {
    hello: compileFloor(dir, "hello", 'console.log("hello");\n'),
    oneProcess: compileFloor(dir, "floor-one-process", ONE_PROCESS),
    residentClient: compileFloor(dir, "floor-resident-client", RESIDENT_CLIENT),
    // The one-process floor and the resident process each have a ledger of their own.
    env: { FLOOR_TRUE: trueBin, FLOOR_SOCKET: socketPath, FLOOR_DB: oneProcessDb },
    stop: () => server.kill(),
  };
}
