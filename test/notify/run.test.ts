import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { undurableEnvelope } from "../../src/notify/envelope.ts";
import { describeArgv, runUndurable } from "../../src/notify/run.ts";
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
