// `li state doctor` (SPEC §12.3): thin over the doctor sweep.
import { defineCommand } from "citty";
import { doctor, doctorLine, DOCTOR_STATUSES, isDoctorStatus } from "../../sweeps/doctor.ts";
import { parsePositiveNumber } from "../../util/duration.ts";
import { UsageError } from "../../util/errors.ts";
import { cliLedger } from "../context.ts";
import { writeJson } from "../output.ts";
import { writeOut } from "../io.ts";
import { safeText } from "../text.ts";

export default defineCommand({
  meta: {
    name: "doctor",
    description: "Finalize running sessions whose current leg is older than --stale-hours AND whose supervisor is gone (or never recorded). A live leg is never touched",
  },
  args: {
    staleHours: { type: "string", description: "hours since the current leg's last sign of life (default 24)" },
    newStatus: { type: "string", description: "aborted (default) or failed" },
    dryRun: { type: "boolean", description: "report, change nothing" },
    json: { type: "boolean", description: "print JSON" },
  },
  async run({ args }) {
    if (args._.length > 0) throw new UsageError(`li state doctor takes no ids; unexpected '${String(args._[0])}'`);
    if (args.newStatus !== undefined && !isDoctorStatus(args.newStatus)) {
      throw new UsageError(`--new-status: ${JSON.stringify(args.newStatus)} is not one of ${DOCTOR_STATUSES.join(", ")}`);
    }
    const options = doctor.validate({
      dryRun: Boolean(args.dryRun),
      ...(args.staleHours !== undefined ? { staleHours: parsePositiveNumber(args.staleHours, "--stale-hours") } : {}),
      ...(args.newStatus !== undefined ? { newStatus: args.newStatus } : {}),
    });
    const ledger = cliLedger({ create: false });
    try {
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
    } finally {
      ledger.close();
    }
  },
});
