// `li state prune` (SPEC §12.5): thin over the prune sweep.
import { command, LEDGER_RETRY_ARG } from "../command.ts";
import { prune, pruneLine, type PruneProgress } from "../../sweeps/prune.ts";
import { pruneProgressText, StatusLine } from "../progress.ts";
import { parseNonNegativeInt } from "../../util/duration.ts";
import { UsageError } from "../../util/errors.ts";
import { cliPaths } from "../paths.ts";
import { writeJson } from "../output.ts";
import { writeErr, writeOut, writeNote } from "../io.ts";
import { safeText } from "../../util/text.ts";

export default command({
  description: "Delete terminal sessions last updated more than --keep-days ago, with their history; sessions still owed to a consumer are kept",
  examples: ["li state prune --keep-days=30 --dry-run", "li state prune --keep-days=90 --files"],
  ledger: "existing",
  args: {
    "keep-days": { type: "string", valueHint: "DAYS", description: "retention in days (default 30)" },
    "dry-run": { type: "boolean", description: "print the counts a real run would delete; change nothing" },
    files: { type: "boolean", description: "also remove the pruned legs' run directories inside RUNS_ROOT, and those of legs killed before their setup once an hour old (never a --save-dir)" },
    json: { type: "boolean", description: "print the counts as JSON" },
    ...LEDGER_RETRY_ARG,
  },
  async run({ args, ledger: open }) {
    if (args._.length > 0) throw new UsageError(`li state prune takes no ids; unexpected '${String(args._[0])}'`);
    const options = prune.validate({
      dryRun: Boolean(args["dry-run"]),
      files: Boolean(args.files),
      ...(args["keep-days"] !== undefined ? { keepDays: parseNonNegativeInt(args["keep-days"], "--keep-days") } : {}),
    });
    const ledger = open();
    // The retention is measured from this `now`: on PostgreSQL the server's clock, measured on connecting.
    await ledger.ready();
    // Batches done / estimated and the rate, on stderr, only when stderr is a terminal.
    const status = StatusLine.onStderr();
    let summary: Awaited<ReturnType<typeof prune.runOnce>>;
    try {
      summary = await prune.runOnce(ledger, ledger.now(), options, {
        runsRoot: cliPaths().runsRoot,
        ...(status ? { onProgress: (p: PruneProgress) => status.show(pruneProgressText(p)) } : {}),
      });
    } finally {
      status?.clear();
    }
    if (args.json) {
      writeJson(summary);
      return 0;
    }
      for (const path of summary.files?.removed ?? []) writeOut(`${options.dryRun ? "would remove" : "removed"} ${safeText(path)}\n`);
      for (const s of summary.files?.skipped ?? []) if (s.why !== "missing") writeNote(`kept ${s.path} (${s.why.replace(/_/g, " ")})`);
      for (const path of summary.orphan_run_dirs?.removed ?? []) writeOut(`${options.dryRun ? "would remove" : "removed"} ${safeText(path)} (its leg was killed before its setup)\n`);
      for (const s of summary.orphan_run_dirs?.kept ?? []) writeNote(`kept ${s.path} (${s.why.replace(/_/g, " ")})`);
      if (summary.rolled_back > 0) writeNote(`${summary.rolled_back} batch(es) rolled back: a candidate survived its deletes`);
      if (options.dryRun) writeNote("dry run: nothing was deleted");
    writeOut(pruneLine(summary) + "\n");
    return 0;
  },
});
