// The backend seam, enforced: only src/ledger/ knows the adapters. Everything else reaches SQLite and
// PostgreSQL through the neutral contracts (backend.ts, reads.ts, wake.ts, watcher-lock.ts, failures.ts),
// so a command, a sweep or the watcher works on either backend unchanged.

import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const SRC = join(import.meta.dir, "../../src");
const ADAPTER_DIRS = ["ledger/sqlite/", "ledger/postgres/"] as const;
/** Static imports and re-exports, dynamic import() and require(): every way a module names another. */
const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(\s*|\brequire\s*\(\s*|^\s*import\s+)["']([^"']+)["']/gm;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith(".ts") ? [path] : [];
  });
}

/** The adapter modules `text` (the source of `file`, under src/) imports, as paths relative to src/. */
function adapterImports(file: string, text: string): string[] {
  const found: string[] = [];
  for (const match of text.matchAll(SPECIFIER)) {
    const specifier = match[1]!;
    if (!specifier.startsWith(".")) continue;
    const target = relative(SRC, resolve(dirname(file), specifier));
    if (ADAPTER_DIRS.some((dir) => target.startsWith(dir))) found.push(target);
  }
  return found;
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
