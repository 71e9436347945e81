// Output capture: a bounded tail, live sinks, and pumps that never hang on a grandchild holding the pipes.

import { describe, expect, test } from "bun:test";
import { drainPumps, pump, Tail } from "../../src/legs/capture.ts";
import { fixture } from "../helpers/fixtures.ts";
import { signalPid, validPid } from "../helpers/until.ts";

const bytes = (s: string) => new TextEncoder().encode(s);

describe("Tail", () => {
  test("keeps everything under the bound", () => {
    const t = new Tail(10);
    t.push(bytes("abc"));
    t.push(bytes("def"));
    expect([t.text(), t.truncated]).toEqual(["abcdef", false]);
  });

  test("keeps only the last bytes past the bound and says so", () => {
    const t = new Tail(5);
    t.push(bytes("abcd"));
    t.push(bytes("efgh"));
    expect([t.text(), t.truncated]).toEqual(["defgh", true]);
  });

  test("drops a multi-byte character cut at the front", () => {
    const t = new Tail(3);
    t.push(bytes("é€x")); // 2 + 3 + 1 bytes: the last 3 cut "€" in two
    expect(t.text()).toBe("x");
  });
});

describe("pumps", () => {
  test("hand every chunk to every sink, and a failing sink does not stop the others", async () => {
    const child = Bun.spawn([fixture("print-lots"), "100"], { stdout: "pipe" });
    const seen: Uint8Array[] = [];
    const p = pump(child.stdout, [() => { throw new Error("EPIPE"); }, (c) => void seen.push(c)]);
    await p.done;
    expect(new TextDecoder().decode(Buffer.concat(seen)).split("\n").filter(Boolean)).toHaveLength(100);
  });

  test("a grandchild holding the pipes is cut off after the grace instead of hanging", async () => {
    // process.env carries the owner token, so the orphaned grandchild is still recognised as ours.
    const child = Bun.spawn([fixture("grandchild-holds-pipes")], { env: process.env, stdout: "pipe", stderr: "pipe" });
    const out: Uint8Array[] = [];
    const pumps = [pump(child.stdout, [(c) => void out.push(c)]), pump(child.stderr, [])];
    await child.exited;
    await drainPumps(pumps, 100);
    const text = new TextDecoder().decode(Buffer.concat(out));
    expect(text).toMatch(/^grandchild \d+\n$/);
    signalPid(validPid(/\d+/.exec(text)?.[0], "the grandchild"), "SIGKILL", { what: "the grandchild" });
  });
});
