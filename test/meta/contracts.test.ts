// The storage contracts' shape, enforced (issue 11 decision 1): every row type lives in the leaf module
// src/ledger/rows.ts, which imports nothing but the policy registry, and the contracts import rows rather
// than each other — only backend.ts, the whole contract, gathers the others — so no cycle can form.

import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const SRC = join(import.meta.dir, "../../src");
const CONTRACTS = ["ledger/backend.ts", "ledger/reads.ts", "ledger/notify-store.ts", "ledger/sweep-store.ts"] as const;

/** The modules under src/ that `file` (relative to src/) imports, relative to src/. */
function importsOf(file: string): string[] {
  const text = readFileSync(join(SRC, file), "utf8");
  return [...text.matchAll(/\bfrom\s*["'](\.[^"']+)["']/g)].map((m) => relative(SRC, resolve(dirname(join(SRC, file)), m[1]!)));
}

describe("the storage contracts", () => {
  test("rows.ts is a leaf: it imports only the policy registry", () => {
    expect(importsOf("ledger/rows.ts")).toEqual(["lifecycle/policy.ts"]);
  });

  test("no contract but backend.ts imports another contract", () => {
    const crossings = CONTRACTS.filter((c) => c !== "ledger/backend.ts").flatMap((c) => importsOf(c).filter((target) => (CONTRACTS as readonly string[]).includes(target)).map((target) => `${c} imports ${target}`));
    expect(crossings).toEqual([]);
  });

  test("no row type is declared outside rows.ts in the contracts", () => {
    const declared = CONTRACTS.flatMap((c) =>
      [...readFileSync(join(SRC, c), "utf8").matchAll(/^export (?:interface|type) (\w+(?:Row|Delivery|Context|State|Session|Dirs|Patch|Set))\b/gm)].map((m) => `${c}: ${m[1]}`),
    );
    expect(declared).toEqual([]);
  });
});
