// The suite's own rules, enforced: a test waits through test/helpers/until.ts, never a fixed sleep or a
// timer of its own, and signals only pids that until.ts validated. A use that is not a wait (a process
// kept alive, a negative window) is allowed only by an entry below that says why.

import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";

const TEST_ROOT = join(import.meta.dir, "..");
/** The helpers own waiting and signalling; everything else goes through them. */
const EXEMPT_DIR = "helpers/";

const RULES = [
  { name: "sleeps and timers", pattern: /\b(?:Bun\.sleep|Bun\.sleepSync|setTimeout|setInterval|Atomics\.wait)\s*\(/ },
  // A process signalling itself (a worker's kill -9 at a hook) names no pid it read anywhere.
  { name: "signals to raw pids", pattern: /\bprocess\.kill\s*\((?!\s*process\.pid\b)/ },
] as const;

interface Allowed {
  file: string;
  /** Text the allowed line contains. */
  line: string;
  why: string;
}

const ALLOWED: Allowed[] = [
  { file: "legs/setup.test.ts", line: "await Bun.sleep(50); // a window of five intervals", why: "a negative check: no heartbeat may start in a window after stop(); nothing to wait for" },
  { file: "sweeps/workers/supervisor.ts", line: "setInterval(() => {}, 1 << 30);", why: "keeps the stand-in supervisor alive until it is signalled; not a wait" },
  { file: "legs/signals.test.ts", line: "(pid, signal) => (look(pid, signal), process.kill(pid, signal))", why: "a recording signal sender handed to GroupTerminator; the pid is the terminator's own group" },
  { file: "meta/until.test.ts", line: 'process.kill(stranger, "SIGKILL");', why: "ends the process that test started without the owner token, to show validPid refuses it" },
  { file: "host/proc.test.ts", line: "expect(process.kill(zombie, 0)).toBe(true);", why: "signal 0 probes a zombie validPid accepted; it delivers nothing" },
  { file: "cli/containment.test.ts", line: 'if (isEscapedSleep(pid)) process.kill(pid, "SIGKILL");', why: "ends an escaped sleep a test left running; an env -i one carries no owner token for signalPid, so it is checked by its command line" },
];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return /\.(ts|js|mjs)$/.test(entry.name) ? [path] : [];
  });
}

interface Finding {
  file: string;
  lineNo: number;
  text: string;
  rule: string;
}

/** Every line of `text` that breaks a rule, unless an allow-list entry for `file` covers it. */
function findings(file: string, text: string, allowed: Allowed[] = ALLOWED): Finding[] {
  const out: Finding[] = [];
  for (const [i, line] of text.split("\n").entries()) {
    for (const rule of RULES) {
      if (!rule.pattern.test(line)) continue;
      if (allowed.some((a) => a.file === file && line.includes(a.line))) continue;
      out.push({ file, lineNo: i + 1, text: line.trim(), rule: rule.name });
    }
  }
  return out;
}

const files = sourceFiles(TEST_ROOT)
  .map((path) => relative(TEST_ROOT, path))
  .filter((file) => !file.startsWith(EXEMPT_DIR) && file !== "meta/waiting.test.ts");

describe("the suite's waiting rules", () => {
  test("no test sleeps, arms a timer or signals a raw pid outside test/helpers, except as allowed with a reason", () => {
    const found = files.flatMap((file) => findings(file, readFileSync(join(TEST_ROOT, file), "utf8")));
    expect(found.map((f) => `${f.file}:${f.lineNo} (${f.rule}) ${f.text}`)).toEqual([]);
  });

  test("every allow-list entry gives a reason and still matches exactly one line", () => {
    for (const entry of ALLOWED) {
      expect(entry.why.length).toBeGreaterThan(10);
      const lines = readFileSync(join(TEST_ROOT, entry.file), "utf8").split("\n").filter((l) => l.includes(entry.line));
      expect({ entry: entry.line, matches: lines.length }).toEqual({ entry: entry.line, matches: 1 });
    }
  });

  test("the scanner flags a sleep, a timer and a raw signal, and lets an allowed line through", () => {
    const sample = ["await Bun.sleep(300);", "const t = setTimeout(done, 5);", "process.kill(pid, 'SIGKILL');", "process.kill(process.pid, 'SIGKILL');", "await until('x', probe);", "keepAlive();"].join("\n");
    expect(findings("x.test.ts", sample, []).map((f) => [f.lineNo, f.rule])).toEqual([
      [1, "sleeps and timers"],
      [2, "sleeps and timers"],
      [3, "signals to raw pids"],
    ]);
    expect(findings("x.test.ts", sample, [{ file: "x.test.ts", line: "Bun.sleep(300)", why: "an example" }]).map((f) => f.lineNo)).toEqual([2, 3]);
  });
});
