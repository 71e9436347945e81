import { describe, expect, test } from "bun:test";
import { formatDuration, MAX_DURATION_SECONDS, parseDuration, parseNonNegativeInt, parsePositiveNumber } from "../../src/util/duration.ts";
import { UsageError } from "../../src/util/errors.ts";

function usageMessage(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError);
    return (error as UsageError).message;
  }
  throw new Error("expected a UsageError");
}

describe("parseDuration", () => {
  test.each([
    ["90", 90],
    ["1.5", 1.5],
    [".5", 0.5],
    ["500ms", 0.5],
    ["45s", 45],
    ["10m", 600],
    ["2h", 7200],
    ["7d", 604800],
    ["1.5h", 5400],
    [" 30 ", 30],
  ])("reads %p as %p seconds", (text, seconds) => {
    expect(parseDuration(text, "--timeout")).toBe(seconds);
  });

  test.each(["0", "0s", "0.0", "0ms"])("refuses zero (%p), naming the flag and the value", (text) => {
    const message = usageMessage(() => parseDuration(text, "--timeout"));
    expect(message).toContain("--timeout");
    expect(message).toContain(JSON.stringify(text));
    expect(message).toContain("greater than zero");
  });

  test.each(["-5", "-1m", "abc", "", "10 m", "10M", "1e3", "0x10", "5w", "m", "1.", "Infinity", "NaN", "1h30m"])(
    "refuses %p as not a duration",
    (text) => {
      const message = usageMessage(() => parseDuration(text, "--sweep-interval"));
      expect(message).toStartWith("--sweep-interval: ");
      expect(message).toContain(JSON.stringify(text));
    },
  );

  test("accepts up to 365 days and refuses anything longer, naming the flag and the value (§18)", () => {
    expect(parseDuration("365d", "--timeout")).toBe(MAX_DURATION_SECONDS);
    expect(parseDuration(String(MAX_DURATION_SECONDS), "--timeout")).toBe(365 * 86400);
    for (const text of ["366d", "365.5d", "8761h", "31536001", "31536000001ms"]) {
      const message = usageMessage(() => parseDuration(text, "--timeout"));
      expect(message).toBe(`--timeout: ${JSON.stringify(text)} is longer than the maximum of 365d`);
    }
  });

  test("refuses a number too large to be finite", () => {
    expect(usageMessage(() => parseDuration("9".repeat(400), "--timeout"))).toContain("too large");
  });
});

describe("parsePositiveNumber", () => {
  test("reads whole and fractional numbers", () => {
    expect(parsePositiveNumber("2", "--phantom-hours")).toBe(2);
    expect(parsePositiveNumber("0.25", "--phantom-hours")).toBe(0.25);
  });

  test.each(["0", "-1", "1h", "abc", "", "1e2"])("refuses %p, naming the flag", (text) => {
    const message = usageMessage(() => parsePositiveNumber(text, "--keep-days"));
    expect(message).toStartWith("--keep-days: ");
    expect(message).toContain(JSON.stringify(text));
  });
});

describe("parseNonNegativeInt", () => {
  test("reads zero and whole numbers", () => {
    expect(parseNonNegativeInt("0", "--auto-resume")).toBe(0);
    expect(parseNonNegativeInt("3", "--auto-resume")).toBe(3);
  });

  test.each(["-1", "1.5", "x", "", "99999999999999999999"])("refuses %p, naming the flag", (text) => {
    const message = usageMessage(() => parseNonNegativeInt(text, "--auto-resume"));
    expect(message).toStartWith("--auto-resume: ");
    expect(message).toContain(JSON.stringify(text));
  });
});

describe("formatDuration", () => {
  test.each([
    [0, "0ms"],
    [0.85, "850ms"],
    [0.9996, "1s"],
    [12, "12s"],
    [59.6, "1m00s"],
    [185, "3m05s"],
    [7800, "2h10m"],
    [7259, "2h00m"],
    [273600, "3d4h"],
    [-12, "-12s"],
    [Number.NaN, "?"],
  ])("shows %p seconds as %p", (seconds, text) => {
    expect(formatDuration(seconds)).toBe(text);
  });
});

describe("parseDuration with allowZero", () => {
  test("0 and 0s parse as 0; a sign never parses; without allowZero 0 is refused", () => {
    expect(parseDuration("0", "--phantom-grace", { allowZero: true })).toBe(0);
    expect(parseDuration("0s", "--phantom-grace", { allowZero: true })).toBe(0);
    expect(parseDuration("2m", "--phantom-grace", { allowZero: true })).toBe(120);
    expect(() => parseDuration("-1", "--phantom-grace", { allowZero: true })).toThrow("--phantom-grace");
    expect(() => parseDuration("0", "--timeout")).toThrow("greater than zero");
  });
});
