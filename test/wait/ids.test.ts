import { describe, expect, test } from "bun:test";
import { parseWaitIds } from "../../src/wait/ids.ts";

describe("parseWaitIds", () => {
  test("splits on commas and whitespace, trims, drops empty pieces", () => {
    expect(parseWaitIds([" a, b ", "c\td", ",,", ""])).toEqual(["a", "b", "c", "d"]);
  });
  test("keeps the first occurrence of a repeated id", () => {
    expect(parseWaitIds(["b,a", "b", "a,c,b"])).toEqual(["b", "a", "c"]);
  });
});
