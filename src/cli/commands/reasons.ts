// `li reasons`: the reason-code vocabulary and which entities accept each domain.
import { defineCommand } from "citty";
import { ENTITY_KINDS, POLICIES } from "../../lifecycle/policy.ts";
import { REASONS, reasonDomain } from "../../lifecycle/reasons.ts";
import { table, writeJson } from "../output.ts";
import { writeOut } from "../io.ts";

export default defineCommand({
  meta: { name: "reasons", description: "List the registered reason codes" },
  args: { json: { type: "boolean", description: "print JSON" } },
  run({ args }) {
    const rows = Object.entries(REASONS).map(([code, meaning]) => ({
      code,
      meaning,
      kinds: code === "legacy.imported" ? [...ENTITY_KINDS] : ENTITY_KINDS.filter((k) => POLICIES[k].reasonDomains.includes(reasonDomain(code))),
    }));
    if (args.json) writeJson(rows);
    else writeOut(table(rows.map((r) => [r.code, r.kinds.join(","), r.meaning])));
    return 0;
  },
});
