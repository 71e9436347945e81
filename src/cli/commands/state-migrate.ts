// `li state migrate [--check]` (SPEC §13): create the ledger and apply the embedded migrations now, or
// (--check) say whether that is needed, changing nothing.
import { command } from "../command.ts";
import { migrateLedger, newerLedgerError, readMigrationState, type MigrationState } from "../../ledger/migration-state.ts";
import { ExitCode, UsageError } from "../../util/errors.ts";
import { safeText } from "../../util/text.ts";
import { writeJson } from "../output.ts";
import { writeOut } from "../io.ts";
import { cliPaths } from "../paths.ts";

function plural(n: number): string {
  return `${n} migration${n === 1 ? "" : "s"}`;
}

/** The --check line: where the ledger stands and what `li state migrate` would do. */
function checkLine(s: MigrationState): string {
  switch (s.state) {
    case "current":
      return `${s.ledger}: current (schema ${s.version})`;
    case "absent":
      return `${s.ledger}: not created yet; li state migrate creates it (schema ${s.known}, ${plural(s.known)})`;
    default:
      return `${s.ledger}: ${plural(s.pending.length)} pending (schema ${s.version}, this li applies up to ${s.known}: ${s.pending.join(", ")}); run li state migrate`;
  }
}

function migratedLine(before: MigrationState, after: MigrationState): string {
  if (before.state === "current") return `${after.ledger}: already current (schema ${after.version})`;
  if (before.state === "absent") return `${after.ledger}: created at schema ${after.version} (${plural(before.pending.length)} applied)`;
  return `${after.ledger}: migrated from schema ${before.version} to ${after.version} (applied ${before.pending.join(", ")})`;
}

const stateJson = (s: MigrationState) => ({ ledger: s.ledger, state: s.state, version: s.version, known: s.known, pending: s.pending });

export default command({
  description:
    "Create the ledger and apply the migrations this li embeds, now: the owner's one-time step on PostgreSQL (later commands may then run as a role that cannot create tables), or a DBA's explicit upgrade. Every other command also migrates on open. --check changes nothing: exit 0 current, 1 not created or migrations pending, 78 written by a newer li",
  examples: ["li state migrate", "li state migrate --check --json"],
  ledger: "none",
  args: {
    check: { type: "boolean", description: "only report: exit 0 when current, 1 when not created or migrations are pending, 78 when written by a newer li" },
    json: { type: "boolean", description: "print JSON: ledger, state (absent, current, pending), version, known, pending" },
  },
  async run({ args }) {
    if (args._.length > 0) throw new UsageError(`li state migrate takes no arguments; unexpected '${safeText(String(args._[0]))}'`);
    const paths = cliPaths();
    if (args.check) {
      const s = await readMigrationState(paths);
      if (s.state === "newer") throw newerLedgerError(s);
      if (args.json) writeJson(stateJson(s));
      else writeOut(safeText(checkLine(s)) + "\n");
      return s.state === "current" ? ExitCode.ok : ExitCode.failure;
    }
    const { before, after } = await migrateLedger(paths);
    if (args.json) writeJson({ ...stateJson(after), applied: before.state === "current" ? [] : before.pending });
    else writeOut(safeText(migratedLine(before, after)) + "\n");
    return ExitCode.ok;
  },
});
