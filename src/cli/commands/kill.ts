// `li kill ID` and `li kill --all-stale` (SPEC §12.2): thin over src/sweeps/kill.ts and the stale-kill sweep.
import { command, LEDGER_RETRY_ARG } from "../command.ts";
import { pushTerminal } from "../../notify/push.ts";
import { killSession, KILL_DEFAULTS } from "../../sweeps/kill.ts";
import { staleKill, staleKillLine } from "../../sweeps/stale-kill.ts";
import { parseDuration } from "../../util/duration.ts";
import { UsageError } from "../../util/errors.ts";
import { writeJson } from "../output.ts";
import { writeErr, writeOut, writeNote } from "../io.ts";
import { safeText } from "../../util/text.ts";
import { ledgerRetrySeconds, notedPatience } from "../patience.ts";
import { resolveIn, WAIT_LOOKUP_ORDER } from "../../ledger/resolve.ts";

export default command({
  description:
    "Cancel a running session, or a scheduled run (queued or waiting: cancelled at once; running: its leg is stopped): SIGTERM its leg and wait (--grace), then force; a leg of another host (PostgreSQL) gets the request through the ledger and stops itself. Exit 0 killed or written, 1 refused or a remote leg not stopped within the grace, 2 not found or ambiguous",
  examples: ["li kill 1a2b3c4d --grace=10 --reason=\"stuck on input\"", "li kill --all-stale --threshold=2h --dry-run"],
  ledger: "existing",
  args: {
    id: { type: "positional", valueHint: "ID", complete: "sessions", description: "a session or scheduled run id (or a unique prefix; a branch or leg run id names its session)", required: false },
    grace: { type: "string", valueHint: "DURATION", description: "seconds to wait for the leg to finalize itself after SIGTERM or, on another host, after the request (default 5)" },
    reason: { type: "string", valueHint: "TEXT", description: "a note recorded with the cancellation" },
    "all-stale": { type: "boolean", description: "cancel every running session whose leg is stale and whose supervisor is dead" },
    threshold: { type: "string", valueHint: "DURATION", description: "with --all-stale: the age a leg must pass (default 3600 s)" },
    "dry-run": { type: "boolean", description: "with --all-stale: report, change nothing" },
    json: { type: "boolean", description: "print JSON" },
    ...LEDGER_RETRY_ARG,
  },
  async run({ args, ledger: open }) {
    const extra = args._.map(String).slice(args.id === undefined ? 0 : 1);
    if (extra.length > 0) throw new UsageError(`li kill takes one id; unexpected '${extra[0]}'`);
    if (args["all-stale"]) {
      if (args.id !== undefined) throw new UsageError("li kill: give an id or --all-stale, not both");
      if (args.grace !== undefined || args.reason !== undefined) throw new UsageError("li kill --all-stale: --grace and --reason apply to one id only");
      const options = staleKill.validate({
        dryRun: Boolean(args["dry-run"]),
        ...(args.threshold !== undefined ? { thresholdSeconds: parseDuration(args.threshold, "--threshold") } : {}),
      });
      const ledger = open();
      // A bulk sweep: it writes transitions and leaves their notices to durable delivery (§9.4).
      // The sweep judges ages at this `now`: on PostgreSQL the server's clock, measured on connecting.
      await ledger.ready();
      const summary = await staleKill.runOnce(ledger, ledger.now(), options);
      if (args.json) {
        const { transitions: _t, ...rest } = summary;
        writeJson(rest);
        return 0;
      }
      for (const a of summary.actions) {
        const verb = options.dryRun ? "would cancel" : a.applied ? "cancelled" : `left (${a.conflict})`;
          writeOut(`${verb} ${safeText(a.session_id)} (leg idle ${Math.round(a.age_seconds)}s)${a.killed ? " and killed its orphaned command" : ""}\n`);
      }
      writeOut(staleKillLine(summary) + "\n");
      return 0;
    }
    if (args.id === undefined) throw new UsageError("li kill: a session id is required (or --all-stale)");
    if (args.threshold !== undefined || args["dry-run"]) throw new UsageError("li kill: --threshold and --dry-run go with --all-stale");
    const graceSeconds = args.grace === undefined ? KILL_DEFAULTS.graceSeconds : parseDuration(args.grace, "--grace");
    // --grace is li kill's own deadline (§17): an unreachable ledger is waited for that long, unless --ledger-retry says otherwise.
    const ledger = open(notedPatience(args.grace === undefined ? ledgerRetrySeconds(args) : ledgerRetrySeconds(args, graceSeconds)));
    const target = await resolveIn(ledger.backend.reads, args.id.trim(), WAIT_LOOKUP_ORDER);
    let sessionId = args.id;
    let scheduleRun: string | null = null;
    if ("found" in target && target.found.kind === "schedule_run") {
      // A scheduled run (§19): cancelled in the ledger while it waits; a running one's leg is stopped below.
      const { cancelRun } = await import("../../schedule/cancel.ts");
      const killed = await cancelRun(ledger, target.found.id, args.reason);
      if (killed.action === "already") {
        writeNote(`schedule run ${killed.run_id} is already ${killed.status}`);
        return 1;
      }
      if (killed.action === "cancelled") {
        if (args.json) writeJson({ run_id: killed.run_id, action: "cancelled", previous_status: killed.previous_status, status: "cancelled", reason_code: "run.cancelled.manual_kill" });
        else writeOut(`${safeText(killed.run_id)}: cancelled (run.cancelled.manual_kill)\n`);
        return 0;
      }
      sessionId = killed.session_id;
      scheduleRun = killed.run_id;
    }
    const result = await killSession(ledger, sessionId, { graceSeconds, ...(args.reason !== undefined ? { reason: args.reason } : {}) }, {
      pushTerminal: (l, event) => pushTerminal(l, event),
    });
    // The run follows its leg's end at once (its leg does too, right after its own final write).
    if (scheduleRun !== null) await (await import("../../schedule/settle.ts")).settleRun(ledger, scheduleRun);
    if (!args.json) for (const line of result.notes) writeNote(`note: ${line}`);
    if (args.json) {
      const { transition: _t, ...rest } = result;
      writeJson(rest);
    } else if (result.action === "lost_race") {
        writeNote(`session ${result.session_id} changed while killing it: now ${result.status}${result.reason_code ? ` (${result.reason_code})` : ""}`);
    } else {
        writeOut(`${safeText(result.session_id)}: ${result.status} (${safeText(result.reason_code ?? "unknown")})\n`);
    }
    return result.action === "lost_race" && result.status === "running" ? 1 : 0;
  },
});
