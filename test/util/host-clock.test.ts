import { describe, expect, test } from "bun:test";
import { parseClockSkew } from "../../src/util/host-clock.ts";

describe("LI_TEST_CLOCK_SKEW", () => {
  test("unset or empty is no skew; a signed number of seconds is taken as given", () => {
    expect(parseClockSkew(undefined)).toBe(0);
    expect(parseClockSkew("")).toBe(0);
    expect(parseClockSkew("600")).toBe(600);
    expect(parseClockSkew("-600")).toBe(-600);
    expect(parseClockSkew("+1.5")).toBe(1.5);
  });

  test("anything else, or more than a year, is refused naming the variable", () => {
    for (const bad of ["10m", "1e3", "NaN", "Infinity", "0x10", String(367 * 86400)]) expect(() => parseClockSkew(bad)).toThrow(/^LI_TEST_CLOCK_SKEW: /);
  });
});
