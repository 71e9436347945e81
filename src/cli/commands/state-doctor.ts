// `li state doctor` (SPEC §12.3): thin over the doctor sweep.
import { command, LEDGER_RETRY_ARG } from "../command.ts";
import { doctor, doctorLine, DOCTOR_STATUSES, isDoctorStatus } from "../../sweeps/doctor.ts";
import { parsePositiveNumber } from "../../util/duration.ts";
import { UsageError } from "../../util/errors.ts";
import { writeJson } from "../output.ts";
import { writeOut } from "../io.ts";
import { safeText } from "../../util/text.ts";

export default command({
  description: "Finalize running sessions whose current leg is older than --stale-hours AND whose supervisor is gone (or never recorded). A live leg is never touched",
  examples: ["li state doctor --stale-hours=24 --dry-run", "li state doctor --new-status=failed"],
  ledger: "existing",
  args: {
    "stale-hours": { type: "string", valueHint: "HOURS", description: "hours since the current leg's last sign of life (default 24)" },
    "new-status": { type: "string", valueHint: "STATUS", description: "aborted (default) or failed" },
    "dry-run": { type: "boolean", description: "report, change nothing" },
    json: { type: "boolean", description: "print JSON" },
    ...LEDGER_RETRY_ARG,
  },
  async run({ args, ledger: open }) {
    if (args._.length > 0) throw new UsageError(`li state doctor takes no ids; unexpected '${String(args._[0])}'`);
    if (args["new-status"] !== undefined && !isDoctorStatus(args["new-status"])) {
      throw new UsageError(`--new-status: ${JSON.stringify(args["new-status"])} is not one of ${DOCTOR_STATUSES.join(", ")}`);
    }
    const options = doctor.validate({
      dryRun: Boolean(args["dry-run"]),
      ...(args["stale-hours"] !== undefined ? { staleHours: parsePositiveNumber(args["stale-hours"], "--stale-hours") } : {}),
      ...(args["new-status"] !== undefined ? { newStatus: args["new-status"] } : {}),
    });
    const ledger = open();
    // The sweep judges ages at this `now`: on PostgreSQL the server's clock, measured on connecting.
    await ledger.ready();
    const summary = await doctor.runOnce(ledger, ledger.now(), options);
    if (args.json) {
      const { transitions: _t, ...rest } = summary;
      writeJson({ ...rest, new_status: options.newStatus });
      return 0;
    }
    for (const a of summary.actions) {
      const verb = options.dryRun ? "would mark" : a.applied ? "marked" : `left (${a.conflict})`;
        writeOut(`${verb} ${safeText(a.session_id)} ${a.status} (leg idle ${Math.round(a.age_seconds)}s)\n`);
    }
    writeOut(doctorLine(summary, options.newStatus) + "\n");
    return 0;
  },
});
