// The backend seam, enforced: only src/ledger/ knows the adapters. Everything else reaches SQLite and
// PostgreSQL through the neutral contracts (backend.ts, reads.ts, wake.ts, watcher-lock.ts, failures.ts),
// so a command, a sweep or the watcher works on either backend unchanged.

import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { localImports, sourceFiles, SRC } from "../helpers/imports.ts";

const ADAPTER_DIRS = ["ledger/sqlite/", "ledger/postgres/"] as const;

/** The adapter modules `text` (the source of `file`, under src/) imports, as paths relative to src/. */
function adapterImports(file: string, text: string): string[] {
  return localImports(file, text).filter((target) => ADAPTER_DIRS.some((dir) => target.startsWith(dir)));
}

describe("the backend seam", () => {
  test("the detector sees every form of import of an adapter module", () => {
    const file = join(SRC, "cli/commands/example.ts");
    const text = [
      'import { x } from "../../ledger/sqlite/errors.ts";',
      'import type { Y } from "../../ledger/postgres/client.ts";',
      'export { z } from "../../ledger/sqlite/reads.ts";',
      'const m = await import("../../ledger/sqlite/wake.ts");',
      'const p = require("../../ledger/postgres/open.ts");',
      'import "../../ledger/sqlite/side-effect.ts";',
      'import { fine } from "../../ledger/wake.ts";',
    ].join("\n");
    expect(adapterImports(file, text)).toEqual([
      "ledger/sqlite/errors.ts",
      "ledger/postgres/client.ts",
      "ledger/sqlite/reads.ts",
      "ledger/sqlite/wake.ts",
      "ledger/postgres/open.ts",
      "ledger/sqlite/side-effect.ts",
    ]);
  });

  test("no module outside src/ledger/ imports src/ledger/sqlite/* or src/ledger/postgres/*", () => {
    const offenders: string[] = [];
    for (const file of sourceFiles(SRC)) {
      if (relative(SRC, file).startsWith("ledger/")) continue;
      for (const target of adapterImports(file, readFileSync(file, "utf8"))) offenders.push(`${relative(SRC, file)} imports ${target}`);
    }
    expect(offenders).toEqual([]);
  });
});
