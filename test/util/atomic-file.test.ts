// writeFileAtomic: whole content, the given mode whatever the umask, no temp file left, with or without the fsync.

import { describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { writeFileAtomic } from "../../src/util/atomic-file.ts";
import { tempDir } from "../helpers/ledger.ts";

describe("writeFileAtomic", () => {
  for (const fsync of [true, false]) {
    test(`fsync ${fsync}: replaces the file whole, with the mode given, and leaves no temp file`, () => {
      const dir = tempDir();
      const target = path.join(dir, "run.json");
      fs.writeFileSync(target, "old\n", { mode: 0o644 });
      const umask = process.umask(0);
      try {
        writeFileAtomic(target, '{"new":true}\n', 0o600, { fsync });
      } finally {
        process.umask(umask);
      }
      expect(fs.readFileSync(target, "utf8")).toBe('{"new":true}\n');
      expect(fs.statSync(target).mode & 0o777).toBe(0o600);
      expect(fs.readdirSync(dir)).toEqual(["run.json"]);
    });
  }
});
