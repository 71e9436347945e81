import { describe, expect, test } from "bun:test";
import { chmodSync, chownSync, closeSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { undurableEnvelope } from "../../src/notify/envelope.ts";
import { describeArgv, openStderr, runUndurable } from "../../src/notify/run.ts";
import { tempDir } from "../helpers/ledger.ts";
import { FAIL, RECORD, recorded } from "./helpers.ts";

describe("running handlers", () => {
  test("without persistence the leg's --notify runs once with durable: false and no event id", async () => {
    const dir = tempDir();
    const out = join(dir, "out");
    const envelope = undurableEnvelope({ sessionId: null, branchId: null, runId: "r1", status: "failed", reasonCode: "run.failed.exit_nonzero", occurredAt: 5, runDir: dir });
    const result = await runUndurable([RECORD, out, "{status}", "{run_id}", "{exit_code}"], envelope, { stderrPath: join(dir, "notify.stderr"), exitCode: 7 });
    expect(result.ok).toBe(true);
    expect(recorded(out)).toEqual([" failed session  failed r1 7"]);
    const seen = JSON.parse(readFileSync(`${out}.stdin`, "utf8"));
    expect(seen).toMatchObject({ schema: "li.run-terminal", schema_version: 1, event_id: null, durable: false, terminal_status: "failed", artifacts: [{ kind: "run_dir", location: dir }] });
  });

  test("a failing handler reports its exit status and its stderr lands in the owner-only file", async () => {
    const dir = tempDir();
    const envelope = undurableEnvelope({ sessionId: "s1", branchId: null, runId: null, status: "completed", reasonCode: "run.completed.ok", occurredAt: 5 });
    const result = await runUndurable([FAIL, join(dir, "runs")], envelope, { stderrPath: join(dir, "deep", "err") });
    expect(result).toMatchObject({ ok: false, why: "exit", error: "exited 3" });
    expect(readFileSync(join(dir, "deep", "err"), "utf8")).toContain("handler failed on purpose");
  });

  test("descriptions of a handler never print argument values in full", () => {
    expect(describeArgv(["/usr/local/bin/notify", "--token=abcdefghijklmnopqrstuvwxyz", "x"])).toBe('notify "--token=abcd…" "x"');
  });
});

describe("the handler's stderr file is li's own (§18)", () => {
  // Today: the file was opened following symlinks and then chmod'ed 0600, so a leg's command could point
  // it at any file of the user: the handler's stderr was appended there and the file's mode changed.
  test("a symlink at its name is not followed: the file it points at is neither written nor chmod'ed", async () => {
    const dir = tempDir();
    const victim = join(dir, "precious.txt");
    writeFileSync(victim, "keep me\n");
    chmodSync(victim, 0o644);
    const stderrFile = join(dir, "notify.stderr");
    symlinkSync(victim, stderrFile);
    const envelope = undurableEnvelope({ sessionId: "s1", branchId: null, runId: null, status: "completed", reasonCode: "run.completed.ok", occurredAt: 5 });
    const result = await runUndurable([FAIL, join(dir, "runs")], envelope, { stderrPath: stderrFile });
    expect(result).toMatchObject({ ok: false, why: "exit" });
    expect(readFileSync(victim, "utf8")).toBe("keep me\n");
    expect(statSync(victim).mode & 0o777).toBe(0o644);
  });

  test("only a regular file of this user is used; anything else is no stderr file at all", () => {
    const dir = tempDir();
    const own = join(dir, "own.stderr");
    const fd = openStderr(own);
    expect(typeof fd).toBe("number");
    if (typeof fd === "number") closeSync(fd);
    expect(statSync(own).mode & 0o777).toBe(0o600);
    expect(openStderr(join(dir))).toBe("ignore");
    if (process.getuid?.() === 0) {
      const theirs = join(dir, "theirs.stderr");
      writeFileSync(theirs, "");
      chownSync(theirs, 54_321, 54_321);
      expect(openStderr(theirs)).toBe("ignore");
    }
  });
});
