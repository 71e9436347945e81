import { describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { readUntrustedFile, UNTRUSTED_FILE_LIMIT } from "../../src/util/untrusted-file.ts";
import { tempDir } from "../helpers/ledger.ts";

function mkfifo(file: string): void {
  const r = Bun.spawnSync(["mkfifo", file]);
  if (r.exitCode !== 0) throw new Error(`mkfifo ${file} failed`);
}

describe("readUntrustedFile (§18)", () => {
  test("a regular file is read whole", () => {
    const file = path.join(tempDir("li-untrusted-"), "a.yaml");
    fs.writeFileSync(file, "agent:\n  timeout: 1h\n");
    expect(readUntrustedFile(file)).toMatchObject({ ok: true, text: "agent:\n  timeout: 1h\n" });
  });

  test("a missing file, or a path through a file, is missing", () => {
    const dir = tempDir("li-untrusted-");
    fs.writeFileSync(path.join(dir, "f"), "x");
    expect(readUntrustedFile(path.join(dir, "nope"))).toEqual({ ok: false, missing: true });
    expect(readUntrustedFile(path.join(dir, "f", "below"))).toEqual({ ok: false, missing: true });
  });

  test("a final symlink is not followed, even to a regular file", () => {
    const dir = tempDir("li-untrusted-");
    fs.writeFileSync(path.join(dir, "target"), "secret");
    fs.symlinkSync(path.join(dir, "target"), path.join(dir, "link"));
    fs.symlinkSync("/dev/zero", path.join(dir, "zero"));
    for (const name of ["link", "zero"]) expect(readUntrustedFile(path.join(dir, name))).toEqual({ ok: false, missing: false, problem: "is a symbolic link (not followed)" });
  });

  test("a FIFO is refused at once instead of blocking open() for a writer", () => {
    const fifo = path.join(tempDir("li-untrusted-"), "fifo");
    mkfifo(fifo);
    expect(readUntrustedFile(fifo)).toEqual({ ok: false, missing: false, problem: "is a FIFO, not a regular file" });
  });

  test("a directory and a device are refused", () => {
    expect(readUntrustedFile(tempDir("li-untrusted-"))).toEqual({ ok: false, missing: false, problem: "is a directory, not a regular file" });
    expect(readUntrustedFile("/dev/null")).toEqual({ ok: false, missing: false, problem: "is a device, not a regular file" });
  });

  test("a file over the bound is refused without being read; one exactly at the bound is read", () => {
    const dir = tempDir("li-untrusted-");
    fs.writeFileSync(path.join(dir, "big"), Buffer.alloc(UNTRUSTED_FILE_LIMIT + 1, 0x78));
    fs.writeFileSync(path.join(dir, "edge"), Buffer.alloc(UNTRUSTED_FILE_LIMIT, 0x78));
    expect(readUntrustedFile(path.join(dir, "big"))).toEqual({ ok: false, missing: false, problem: `is larger than 1 MiB (${UNTRUSTED_FILE_LIMIT + 1} bytes)` });
    const edge = readUntrustedFile(path.join(dir, "edge"));
    expect(edge.ok && edge.text.length).toBe(UNTRUSTED_FILE_LIMIT);
    expect(readUntrustedFile(path.join(dir, "edge"), 1024)).toEqual({ ok: false, missing: false, problem: `is larger than 1 KiB (${UNTRUSTED_FILE_LIMIT} bytes)` });
  });
});
