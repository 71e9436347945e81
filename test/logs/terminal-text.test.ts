// TerminalText: what li logs writes to a terminal, chunk by chunk.
import { describe, expect, test } from "bun:test";
import { TerminalText } from "../../src/logs/terminal-text.ts";

/** The rendering of `chunks` fed one by one, then ended. */
function render(...chunks: string[]): string {
  const t = new TerminalText();
  return chunks.map((c) => t.push(c)).join("") + t.end();
}

describe("TerminalText", () => {
  test("keeps SGR colour sequences and resets colour at the end", () => {
    expect(render("\x1b[1;32mok\x1b[0m\n")).toBe("\x1b[1;32mok\x1b[0m\n\x1b[0m");
    expect(render("\x1b[38:5:208mx")).toBe("\x1b[38:5:208mx\x1b[0m");
  });

  test("escapes every other control: a title, the clipboard, a cursor move, a screen clear, a bare ESC", () => {
    expect(render("\x1b]0;title\x07\x1b]52;c;aGk=\x07\x1b[2J\x1b[H\x1bc\n")).toBe("\\x1b]0;title\\x07\\x1b]52;c;aGk=\\x07\\x1b[2J\\x1b[H\\x1bc\n");
    expect(render("\x1b[" + "1;".repeat(40) + "m")).toStartWith("\\x1b[");
  });

  test("a carriage return before more text rewrites the line; CR LF is a line end; a trailing CR moves nothing", () => {
    expect(render("progress 10%\rprogress 100%\n")).toBe("progress 10%\r\x1b[Kprogress 100%\n");
    expect(render("dos line\r\n")).toBe("dos line\n");
    expect(render("done\r")).toBe("done");
  });

  test("a sequence or a CR split across chunks is the same as whole", () => {
    const whole = "a\x1b[31mred\x1b[0m\r\nb\rc\x1b]0;t\x07";
    for (let i = 1; i < whole.length; i++) expect(render(whole.slice(0, i), whole.slice(i))).toBe(render(whole));
    expect(render("x\x1b[3")).toBe("x\\x1b[3");
  });
});
