// The imports of li's own source, read as text: what the meta tests (the backend seam, the floors of
// the house) check. Every way a module names another counts: a type-only import couples the two files
// as surely as a value import, and a lazy import() is still a dependency, only a later one.

import { existsSync, readdirSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

export const SRC = join(import.meta.dir, "../../src");

/** Static imports and re-exports, dynamic import() and require(): every way a module names another. */
const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(\s*|\brequire\s*\(\s*|^\s*import\s+)["']([^"']+)["']/gm;

/** Every .ts file below `dir`, as absolute paths. */
export function sourceFiles(dir: string = SRC): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith(".ts") ? [path] : [];
  });
}

/**
 * The modules under src/ that `text` (the source of `file`) imports, as paths relative to src/, in the
 * order written. Packages and files outside src/ (package.json) are not li's modules: left out.
 */
export function localImports(file: string, text: string): string[] {
  const found: string[] = [];
  for (const match of text.matchAll(SPECIFIER)) {
    const specifier = match[1]!;
    if (!specifier.startsWith(".")) continue;
    const absolute = resolve(dirname(file), specifier);
    const target = relative(SRC, !absolute.endsWith(".ts") && existsSync(`${absolute}.ts`) ? `${absolute}.ts` : absolute);
    if (!target.startsWith("..")) found.push(target);
  }
  return found;
}
