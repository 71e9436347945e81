// Runs test/legs/workers/leg-at.ts: li's leg service in a process of its own that pauses (or dies) at one point of its leg.

import path from "node:path";
import { liEnv } from "../helpers/cli.ts";
import type { AgentHome } from "./agent-harness.ts";

const WORKER = path.join(import.meta.dir, "workers/leg-at.ts");

export type LegPoint = "beforeSetup" | "afterSetup" | "beforeSpawn" | "atSpawn" | "afterSpawn";

/** `paused` is the file the worker writes its pid to once paused (action "pause"). */
export function legAt(home: AgentHome, point: LegPoint, action: "die" | "pause", command: string[]) {
  const paused = path.join(home.scratch, `paused-${point}`);
  const proc = Bun.spawn([process.execPath, WORKER, home.home, point, action, paused, "--", ...command], {
    env: liEnv(home.home),
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const out = Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]).then(([stdout, stderr, code]) => ({ stdout, stderr, code, signal: proc.signalCode }));
  return { proc, paused, out };
}
