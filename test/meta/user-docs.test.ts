// The docs a user reads say what they do and see: no source or test files to open, no design records or
// planning documents they cannot reach, no notes about who built what when. Notes for people changing
// li itself live in docs/development.md (and docs/architecture.md, docs/benchmarks.md).

import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

const ROOT = join(import.meta.dir, "../..");
const FOR_DEVELOPERS = new Set(["development.md", "architecture.md", "benchmarks.md"]);
const USER_DOCS = ["README.md", ...readdirSync(join(ROOT, "docs")).filter((f) => f.endsWith(".md") && !FOR_DEVELOPERS.has(f)).map((f) => `docs/${f}`)];

const BUILD_NOTES: [string, RegExp][] = [
  ["a source or test file", /(?<![~\w/.])(?:src|test|scripts)\/[\w./-]+\.(?:ts|py|sh)\b/],
  ["the product contract or a design record", /\bSPEC\b|§\d|\bADR-\d/],
  ["an issue or a work session", /\bissue \d+|\b(?:in|during) this session\b/i],
];

describe("user docs", () => {
  for (const file of USER_DOCS) {
    test(`${file} holds no build notes`, () => {
      const found: string[] = [];
      readFileSync(join(ROOT, file), "utf8").split("\n").forEach((line, i) => {
        for (const [what, pattern] of BUILD_NOTES) {
          const m = pattern.exec(line);
          if (m) found.push(`${file}:${i + 1}: ${what}: ${m[0]}`);
        }
      });
      expect(found).toEqual([]);
    });
  }

  test("the systemd user units keep running after logout and say where the binary is", () => {
    for (const file of ["docs/watch.md", "docs/install.md"]) {
      const text = readFileSync(join(ROOT, file), "utf8");
      expect(text).toContain('loginctl enable-linger "$USER"');
      expect(text).toContain("%h/.local/bin/li` is where docs/install.md puts the binary");
    }
  });
});
