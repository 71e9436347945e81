import { describe, expect, test } from "bun:test";
import { createLog, formatLogLine } from "../../src/watch/log.ts";

const AT = new Date("2026-01-02T03:04:05.678Z");

describe("the watcher's log", () => {
  test("a text line is the time, the action and key=value fields, quoting values with spaces", () => {
    expect(formatLogLine({ action: "deliver", event_id: "e1", state: "acked", error: "exit 3 from x", none: null }, "text", AT)).toBe(
      '2026-01-02T03:04:05.678Z deliver event_id=e1 state=acked error="exit 3 from x" none=-',
    );
  });

  test("a json line is one object with the time first", () => {
    expect(JSON.parse(formatLogLine({ action: "reap", session_id: "s", applied: true }, "json", AT))).toEqual({ time: AT.toISOString(), action: "reap", session_id: "s", applied: true });
  });

  test("a handler's argv never reaches the log, and long texts are clipped to one line", () => {
    const line = formatLogLine({ action: "deliver", argv: ["/bin/notify", "--token=secret"], error: `first\nsecond ${"x".repeat(500)}` }, "text", AT);
    expect(line).not.toContain("secret");
    expect(line).not.toContain("\n");
    expect(line.length).toBeLessThan(300);
  });

  test("control characters in a value are escaped in text lines, exact in json lines", () => {
    const entry = { action: "deliver", error: "boom\u001b]52;c;aGk\u0007", path: "/tmp/a\u009bb" };
    const text = formatLogLine(entry, "text", AT);
    expect(text).not.toMatch(/[\u0000-\u001f\u007f-\u009f]/);
    expect(text).toContain("error=boom\\x1b]52;c;aGk\\x07");
    expect(text).toContain("path=/tmp/a\\x9bb");
    expect(JSON.parse(formatLogLine(entry, "json", AT))).toMatchObject({ error: entry.error, path: entry.path });
  });

  test("each entry becomes exactly one line", () => {
    const lines: string[] = [];
    const log = createLog("json", (l) => lines.push(l), () => AT);
    log({ action: "start" });
    log({ action: "stop" });
    expect(lines.join("").split("\n").filter(Boolean).map((l) => JSON.parse(l).action)).toEqual(["start", "stop"]);
  });
});
