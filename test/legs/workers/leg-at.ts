// A leg process (li agent's service, real signals, real ledger) that dies or pauses at one point of its leg: test only.
// Usage: leg-at.ts LI_HOME POINT die|pause PAUSED_FILE -- COMMAND…
//   POINT: beforeSetup | afterSetup | beforeSpawn | atSpawn | afterSpawn (src/legs/leg.ts LegHooks); atSpawn: die only.
//   die:   SIGKILL to itself there (what a kill -9 at that point leaves behind).
//   pause: writes its pid to PAUSED_FILE there, once listening, and waits for SIGTERM/SIGINT/SIGHUP; then the leg goes on.
// Prints one JSON line {status, reason_code, session_id, exit} when the leg ends, and exits with li's exit code.
import fs from "node:fs";
import { runAgent } from "../../../src/legs/agent.ts";
import type { LegHooks } from "../../../src/legs/leg.ts";
import { LI_SIGNALS, type LiSignal } from "../../../src/legs/signals.ts";
import type { AgentRequest } from "../../../src/legs/request.ts";
import { openLedger } from "../../../src/ledger/open.ts";
import { pathsForHome } from "../../helpers/backends.ts";

const POINTS = ["beforeSetup", "afterSetup", "beforeSpawn", "atSpawn", "afterSpawn"] as const;
type Point = (typeof POINTS)[number];

const [home, point, action, pausedFile, dashdash, ...argv] = process.argv.slice(2);
if (!home || !POINTS.includes(point as Point) || (action !== "die" && action !== "pause") || (point === "atSpawn" && action !== "die") || !pausedFile || dashdash !== "--" || argv.length === 0) {
  throw new Error("usage: leg-at.ts LI_HOME beforeSetup|afterSetup|beforeSpawn|atSpawn|afterSpawn die|pause PAUSED_FILE -- COMMAND…");
}

/** Resolves at li's next signal; li's own trap (installed earlier) has already seen it by then. */
function nextSignal(): Promise<LiSignal> {
  return new Promise((resolve) => {
    const names = Object.keys(LI_SIGNALS) as LiSignal[];
    const handlers = names.map((name) => {
      const handler = () => {
        for (const [n, h] of handlers) process.off(n, h);
        resolve(name);
      };
      process.on(name, handler);
      return [name, handler] as const;
    });
  });
}

async function atPoint(): Promise<void> {
  if (action === "die") process.kill(process.pid, "SIGKILL");
  const signalled = nextSignal();
  fs.writeFileSync(`${pausedFile}.tmp`, `${process.pid}\n`);
  fs.renameSync(`${pausedFile}.tmp`, pausedFile!);
  await signalled;
}

// atSpawn is synchronous (the spawn is its very next call): a kill -9 is all that can fall there.
const hooks: LegHooks = point === "atSpawn" ? { atSpawn: () => process.kill(process.pid, "SIGKILL") } : { [point as Point]: atPoint };
const paths = pathsForHome(home);
const ledger = openLedger(paths, { create: true });
const log = (line: string) => process.stderr.write(`${line}\n`);
const req: AgentRequest = { argv, resumeArgv: null, resume: null, notify: null, timeout: null, contract: null, contractWarnings: [], saveDir: undefined, runId: undefined, cwd: null, baseRef: null, invocationId: null, linkedSessionId: null, autoResume: 0, evidenceGate: false, detach: false, persist: true, json: false };
const outcome = await runAgent(req, {
  ledger,
  runsRoot: paths.runsRoot,
  workdir: process.cwd(),
  io: { stdout: () => {}, stderr: () => {}, log },
  // The test run's own environment (its ownership token included), as li agent passes its own on.
  env: { ...process.env },
  stdin: "ignore",
  legHooks: hooks,
});
ledger.close();
process.stdout.write(`${JSON.stringify({ status: outcome.result.status, reason_code: outcome.result.reasonCode, session_id: outcome.plan.sessionId, exit: outcome.exit })}\n`);
process.exit(outcome.exit);
