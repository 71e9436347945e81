// A leg process that dies between its final commit and its push (SIGKILL from an after-commit hook): test only.
// Usage: kill-after-commit.ts LI_HOME NOTIFY_TEMPLATE -- COMMAND…
import fs from "node:fs";
import { runAgent } from "../../../src/legs/agent.ts";
import { LegNotifier } from "../../../src/legs/notify.ts";
import type { AgentRequest } from "../../../src/legs/request.ts";
import { openLedger } from "../../../src/ledger/open.ts";
import { pathsForHome } from "../../helpers/backends.ts";

const [home, template, dashdash, ...argv] = process.argv.slice(2);
if (!home || !template || dashdash !== "--" || argv.length === 0) throw new Error("usage: kill-after-commit.ts LI_HOME TEMPLATE -- COMMAND…");
const paths = pathsForHome(home);
const ledger = openLedger(paths, { create: true });
const log = (line: string) => process.stderr.write(`${line}\n`);
const req: AgentRequest = { argv, resumeArgv: null, resume: null, notify: template, timeout: null, contract: null, contractWarnings: [], saveDir: undefined, runId: undefined, cwd: null, baseRef: null, invocationId: null, linkedSessionId: null, autoResume: 0, evidenceGate: false, detach: false, persist: true, json: false };
await runAgent(req, {
  ledger,
  runsRoot: paths.runsRoot,
  workdir: process.cwd(),
  io: { stdout: () => {}, stderr: () => {}, log },
  env: {},
  stdin: "ignore",
  notifier: await LegNotifier.load({ notifyFlag: template, settings: null, log }),
  // Runs before the notifier's push: the commit is done, the push never happens.
  afterCommit: [(result) => { fs.writeSync(1, `${JSON.stringify({ persisted: result.persisted })}\n`); process.kill(process.pid, "SIGKILL"); }],
});
