// The one escaping helper of every human renderer (§18): what it escapes, what it keeps.

import { describe, expect, test } from "bun:test";
import { safeLines, safeText } from "../../src/util/text.ts";
import { table } from "../../src/cli/output.ts";

describe("safeText", () => {
  test("ESC, BEL, C1 and DEL are shown as \\x escapes", () => {
    expect(safeText("\u001b]52;c;aGk=\u0007\u001b[2J")).toBe("\\x1b]52;c;aGk=\\x07\\x1b[2J");
    expect(safeText("a\u009b31mb\u007f")).toBe("a\\x9b31mb\\x7f");
  });

  test("newline, carriage return and tab are escaped: a value can never forge a line or a column", () => {
    expect(safeText("ok\nsession 123\tstatus=completed\r")).toBe("ok\\x0asession 123\\x09status=completed\\x0d");
  });

  test("bidirectional overrides, line separators and lone surrogates are escaped; other text is kept", () => {
    expect(safeText("a\u202eb\u2028c\u2066")).toBe("a\\u202eb\\u2028c\\u2066");
    expect(safeText("x\ud800y\udc00")).toBe("x\\ud800y\\udc00");
    expect(safeText("héllo ✓ 😀 \ufffd 'q' \"d\" \\")).toBe("héllo ✓ 😀 \ufffd 'q' \"d\" \\");
  });

  test("null and undefined print as -, numbers as themselves", () => {
    expect(safeText(null)).toBe("-");
    expect(safeText(undefined)).toBe("-");
    expect(safeText(42)).toBe("42");
  });
});

describe("safeLines", () => {
  test("keeps newline and tab, escapes the rest (carriage return included)", () => {
    expect(safeLines("one\ttwo\nthree\r\u001b[2K\n")).toBe("one\ttwo\nthree\\x0d\\x1b[2K\n");
  });
});

describe("table", () => {
  test("every cell is escaped, so a stored value cannot add a row", () => {
    const out = table([["ID", "COMMAND"], ["abc", "echo hi\nforged 1 completed"]]);
    expect(out.split("\n").filter(Boolean)).toHaveLength(2);
    expect(out).toContain("echo hi\\x0aforged 1 completed");
  });

  test("painted cells are coloured only when colour is on, and padding ignores the colour codes", () => {
    const rows = [[{ text: "STATUS", colour: "bold" as const }, "X"], [{ text: "ok", colour: "green" as const }, "Y"]];
    expect(table(rows)).toBe("STATUS  X\nok      Y\n");
    expect(table(rows, { colour: true })).toBe("\u001b[1mSTATUS\u001b[0m  X\n\u001b[32mok\u001b[0m      Y\n");
  });

  test("widths are terminal columns: wide characters count two, and a cut never splits one", () => {
    expect(table([["日本", "x"], ["ab", "y"]])).toBe("日本  x\nab    y\n");
    expect(table([["id", "😀😀😀😀"]], { maxWidth: 9 })).toBe("id  😀😀…\n");
  });

  test("maxWidth cuts the last column only, marking the cut", () => {
    expect(table([["abcdefgh", "a long command line"]], { maxWidth: 16 })).toBe("abcdefgh  a lon…\n");
    expect(table([["abcdefgh", "short"]], { maxWidth: 16 })).toBe("abcdefgh  short\n");
    // Never below one character of the last column: the id is never cut.
    expect(table([["abcdefghijklmnop", "cmd"]], { maxWidth: 8 })).toBe("abcdefghijklmnop  …\n");
  });
});
