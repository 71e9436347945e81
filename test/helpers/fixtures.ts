// Absolute paths of the fixture programs in test/fixtures/bin, each checked to be executable.

import fs from "node:fs";
import path from "node:path";

/** The folder of fixture programs, for tests that put it on PATH. */
export const FIXTURE_BIN = path.resolve(import.meta.dir, "../fixtures/bin");

export const FIXTURE_NAMES = [
  "forever",
  "exit-with",
  "ignore-sigterm",
  "kill-self",
  "print-nothing",
  "print-lots",
  "echo-env",
  "write-artifact",
  "grandchild-holds-pipes",
  "count-signals",
  "escalate",
  "exec-chain",
  "read-stdin",
  "escape",
] as const;

export type FixtureName = (typeof FIXTURE_NAMES)[number];

/** The absolute path of a fixture program; throws naming the file when it is missing or not executable. */
export function fixture(name: FixtureName): string {
  const file = path.join(FIXTURE_BIN, name);
  try {
    fs.accessSync(file, fs.constants.X_OK);
  } catch {
    throw new Error(`fixture ${file} is missing or not executable (chmod +x it)`);
  }
  return file;
}
