// `li reasons`: the reason-code vocabulary and which entities accept each domain.
import { command } from "../command.ts";
import { ENTITY_KINDS } from "../../lifecycle/policy.ts";
import { REASONS, reasonRefusal } from "../../lifecycle/reasons.ts";
import { table, writeJson } from "../output.ts";
import { writeOut } from "../io.ts";

export default command({
  description: "List the registered reason codes, the kinds that accept each, and what each means",
  examples: ["li reasons", "li reasons --json"],
  ledger: "none",
  args: { json: { type: "boolean", description: "print JSON" } },
  run({ args }) {
    const rows = Object.entries(REASONS).map(([code, meaning]) => ({
      code,
      meaning,
      // The guarded write's own test, so this table never disagrees with what it accepts.
      kinds: ENTITY_KINDS.filter((k) => reasonRefusal(k, code) === null),
    }));
    if (args.json) writeJson(rows);
    else writeOut(table(rows.map((r) => [r.code, r.kinds.join(","), r.meaning])));
    return 0;
  },
});
