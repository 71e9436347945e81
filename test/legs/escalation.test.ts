import { describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { cutUtf8, escalationEvidence, MAX_ESCALATION_ENTRIES, MAX_ESCALATION_REASON, readEscalations } from "../../src/legs/escalation.ts";
import { tempDir } from "../helpers/ledger.ts";

const fileWith = (text: string) => {
  const file = path.join(tempDir("li-escalate-"), "escalations.jsonl");
  fs.writeFileSync(file, text);
  return file;
};

describe("readEscalations (§8.2 step 7, §18)", () => {
  test("JSON objects are kept, other lines as their text; no file is no escalation", () => {
    expect(readEscalations(fileWith('{"reason": "needs a human"}\nnot json\n[1]\n'))).toEqual({
      entries: [{ reason: "needs a human" }, { text: "not json" }, { text: "[1]" }],
      dropped: 0,
      refused: null,
    });
    expect(readEscalations(path.join(tempDir("li-escalate-"), "none"))).toEqual({ entries: [], dropped: 0, refused: null });
  });

  test("only the first 64 entries are kept, with a count of the dropped ones", () => {
    const e = readEscalations(fileWith(Array.from({ length: 500 }, (_, i) => JSON.stringify({ reason: `r${i}` })).join("\n")));
    expect(e.entries).toHaveLength(MAX_ESCALATION_ENTRIES);
    expect(e.entries.at(-1)).toEqual({ reason: "r63" });
    expect(e.dropped).toBe(500 - MAX_ESCALATION_ENTRIES);
    expect(escalationEvidence(e).at(-1)).toEqual({ kind: "escalation_dropped", dropped: 436, kept: 64 });
  });

  test("a long reason is cut to 4 KiB, and a long entry keeps only its cut reason", () => {
    const line = JSON.stringify({ reason: "y".repeat(100_000), blob: "z".repeat(10) });
    const e = readEscalations(fileWith(`${line}\n${"x".repeat(50_000)}\n`));
    expect(e.entries[0]).toEqual({ reason: "y".repeat(MAX_ESCALATION_REASON), truncated: true, original_length: line.length });
    expect(e.entries[1]).toEqual({ text: "x".repeat(MAX_ESCALATION_REASON), truncated: true, original_length: 50_000 });
    expect(JSON.stringify(escalationEvidence(e)).length).toBeLessThan(3 * MAX_ESCALATION_REASON);
  });

  test("the 4 KiB cut counts UTF-8 bytes and never splits a character (a surrogate pair stays whole)", () => {
    // 4095 ASCII bytes, then a 4-byte emoji straddling the boundary: it is dropped whole, not halved.
    const reason = `${"a".repeat(4095)}\u{1F600}${"b".repeat(10)}`;
    const line = JSON.stringify({ reason });
    const [cut] = readEscalations(fileWith(`${line}\n`)).entries;
    expect(cut).toEqual({ reason: "a".repeat(4095), truncated: true, original_length: Buffer.byteLength(line) });
    // Two-byte characters: 4 KiB holds 2048 of them.
    const [wide] = readEscalations(fileWith(`${JSON.stringify({ reason: "\u00e9".repeat(3000) })}\n`)).entries;
    expect(wide!.reason).toBe("\u00e9".repeat(2048));
    expect(cutUtf8("\u{1F600}", 3)).toBe("");
    expect(cutUtf8("short", 4096)).toBe("short");
  });

  test("a symlink (to /dev/zero) or a FIFO at the path is refused and becomes evidence, without reading or blocking", () => {
    const dir = tempDir("li-escalate-");
    fs.symlinkSync("/dev/zero", path.join(dir, "zero"));
    expect(Bun.spawnSync(["mkfifo", path.join(dir, "fifo")]).exitCode).toBe(0);
    const zero = readEscalations(path.join(dir, "zero"));
    expect(zero).toEqual({ entries: [], dropped: 0, refused: `escalation file ${path.join(dir, "zero")} is a symbolic link (not followed)` });
    expect(escalationEvidence(zero)).toEqual([{ kind: "escalation_refused", problem: zero.refused }]);
    expect(readEscalations(path.join(dir, "fifo")).refused).toBe(`escalation file ${path.join(dir, "fifo")} is a FIFO, not a regular file`);
  });
});
