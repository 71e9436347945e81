// runAgent through its module API: a request with nothing set but what a test gives, and a leg's
// dependencies on a temp ledger (runs under its home, a scratch working directory, a silent io).

import path from "node:path";
import type { AgentDeps } from "../../src/legs/agent.ts";
import type { AgentRequest } from "../../src/legs/request.ts";
import { tempDir, type TempLedger } from "../helpers/ledger.ts";

/** `li agent -- true` as parsed, with `over` on top. */
export const agentRequest = (over: Partial<AgentRequest> = {}): AgentRequest => ({
  argv: ["true"], resumeArgv: null, resume: null, notify: null, timeout: null, contract: null, contractWarnings: [], saveDir: undefined, runId: undefined, cwd: null,
  baseRef: null, invocationId: null, linkedSessionId: null, autoResume: 0, evidenceGate: false, detach: false, persist: true, json: false, ...over,
});

/** A leg's dependencies on the temp ledger `t`, its runs root under t's home, and whatever the test adds. */
export const agentDepsOn = (t: TempLedger, over: Partial<AgentDeps> = {}): AgentDeps => ({
  ledger: t.ledger,
  runsRoot: path.join(t.home, "runs"),
  workdir: tempDir(),
  io: { stdout: () => {}, stderr: () => {}, log: () => {} },
  env: {},
  stdin: "ignore",
  ...over,
});
