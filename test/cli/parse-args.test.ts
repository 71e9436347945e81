// li's argument parser: the declared flags and positionals, as the commands read them.

import { describe, expect, test } from "bun:test";
import { parseArgs } from "../../src/cli/parse-args.ts";
import type { LiArgs } from "../../src/cli/command.ts";
import { UsageError } from "../../src/util/errors.ts";

const defs = {
  id: { type: "positional", description: "", required: false },
  resume: { type: "string", alias: "r", description: "" },
  "save-dir": { type: "string", description: "" },
  json: { type: "boolean", description: "" },
  persist: { type: "boolean", default: true, description: "" },
  quiet: { type: "boolean", alias: "q", description: "" },
  format: { type: "enum", options: ["text", "json"], description: "" },
} as const satisfies LiArgs;

const parse = (...words: string[]) => parseArgs(words, defs, "li test") as Record<string, unknown>;

describe("parseArgs", () => {
  test("a string flag takes the next word or its =value; the last of a repeated one wins", () => {
    expect(parse("--save-dir", "out")["save-dir"]).toBe("out");
    expect(parse("--save-dir=a=b")["save-dir"]).toBe("a=b");
    expect(parse("--save-dir", "-x")["save-dir"]).toBe("-x");
    expect(parse("--save-dir", "one", "--save-dir", "two")["save-dir"]).toBe("two");
  });

  test("booleans: present is true, --no-NAME and =false are false, defaults apply when absent", () => {
    expect(parse("--json").json).toBe(true);
    expect(parse().json).toBeUndefined();
    expect(parse().persist).toBe(true);
    expect(parse("--no-persist").persist).toBe(false);
    expect(parse("--persist=false").persist).toBe(false);
    expect(parse("--json=true").json).toBe(true);
  });

  test("a boolean's =value is true or false only: --persist=no, =0 or =yes are usage errors naming the flag, as is --no-NAME=…", () => {
    for (const word of ["--persist=no", "--persist=0", "--json=yes", "--json="]) {
      const flag = word.split("=")[0];
      expect(() => parse(word)).toThrow(new UsageError(`${flag}: '${word.split("=")[1]}' is not true or false (a switch: give ${flag} or --no-${flag!.slice(2)})`));
    }
    expect(() => parse("--no-persist=true")).toThrow(new UsageError("--no-persist takes no value (got 'true')"));
  });

  test("short aliases: -r VALUE, -rVALUE, and a bundle whose last letter takes the value", () => {
    expect(parse("-r", "b1").resume).toBe("b1");
    expect(parse("-rb1").resume).toBe("b1");
    expect(parse("-qr", "b2")).toMatchObject({ quiet: true, resume: "b2" });
  });

  test("positionals fill the declared ones in order and all stay in _; a negative number is a word", () => {
    expect(parse("abc", "--json", "def")).toMatchObject({ id: "abc", _: ["abc", "def"], json: true });
    expect(parse("-5")).toMatchObject({ id: "-5", _: ["-5"] });
  });

  test("a missing required positional or flag, or a value outside an enum, is a usage error naming it", () => {
    const required = { kind: { type: "positional", description: "", required: true }, to: { type: "string", required: true, description: "" } } as const satisfies LiArgs;
    expect(() => parseArgs([], required, "li x")).toThrow(new UsageError("missing KIND for 'li x' (see li x --help)"));
    expect(() => parseArgs(["play"], required, "li x")).toThrow(/flag --to is required for 'li x'/);
    expect(parseArgs(["play", "--to", "y"], required, "li x")).toMatchObject({ kind: "play", to: "y" });
    expect(() => parse("--format", "xml")).toThrow(/--format: 'xml' is not one of text, json/);
    expect(parse("--format", "json").format).toBe("json");
  });
});
