// The stream-file reader behind `li logs`: the last N lines across chunk boundaries, draining from an
// offset as a file grows, and refusing what is not a regular file.

import { describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { LogFileError, StreamReader } from "../../src/logs/read.ts";
import { tempDir } from "../helpers/ledger.ts";

function readAll(reader: StreamReader): string {
  let text = "";
  reader.drain((bytes) => (text += Buffer.from(bytes).toString()));
  return text;
}

describe("StreamReader", () => {
  const dir = tempDir("li-read-");

  test.each([
    ["a\nb\nc\n", 2, "b\nc\n"],
    ["a\nb\nc", 2, "b\nc"],
    ["a\nb\nc\n", 5, "a\nb\nc\n"],
    ["a\n\n\n", 2, "\n\n"],
    ["", 3, ""],
  ])("the last lines of %p (%p) are %p", (content, lines, expected) => {
    const file = path.join(dir, `t-${Math.random()}`);
    fs.writeFileSync(file, content);
    const reader = StreamReader.open(file);
    reader.seekToLastLines(lines);
    expect(readAll(reader)).toBe(expected);
    reader.close();
  });

  test("the last lines of a file larger than one read chunk", () => {
    const file = path.join(dir, "big");
    const lines = Array.from({ length: 30_000 }, (_, i) => `line ${i}`);
    fs.writeFileSync(file, lines.join("\n") + "\n");
    const reader = StreamReader.open(file);
    reader.seekToLastLines(20_000);
    expect(readAll(reader)).toBe(lines.slice(10_000).join("\n") + "\n");
    reader.close();
  });

  test("drain reads what was appended since the last drain", () => {
    const file = path.join(dir, "growing");
    fs.writeFileSync(file, "one\n");
    const reader = StreamReader.open(file);
    expect(readAll(reader)).toBe("one\n");
    expect(readAll(reader)).toBe("");
    fs.appendFileSync(file, "two\n");
    expect(readAll(reader)).toBe("two\n");
    reader.close();
  });

  test("a symlink, a FIFO and a directory are refused naming the file; nothing blocks", () => {
    const link = path.join(dir, "link");
    fs.symlinkSync("/etc/hostname", link);
    expect(() => StreamReader.open(link)).toThrow(LogFileError);
    expect(() => StreamReader.open(link)).toThrow(`${link} is a symbolic link`);
    const fifo = path.join(dir, "fifo");
    Bun.spawnSync(["mkfifo", fifo]);
    expect(() => StreamReader.open(fifo)).toThrow(`${fifo} is a FIFO, not a regular file`);
    expect(() => StreamReader.open(dir)).toThrow(`${dir} is a directory, not a regular file`);
  });
});
