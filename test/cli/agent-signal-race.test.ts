// SIGTERM to dist/li the moment its session row appears (issue 9: li used to die outright there, 12 of 12).

import { describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { fixture } from "../helpers/fixtures.ts";
import { agentHome, rows, spawnLi } from "../legs/agent-harness.ts";
import { signalPid, until } from "../helpers/until.ts";

describe("SIGTERM as soon as the session is recorded", () => {
  test("whatever the command's progress, li handles it: the session ends cancelled and li exits 143 (5 rounds)", async () => {
    for (let round = 0; round < 5; round++) {
      const home = agentHome();
      const run = spawnLi(["agent", "--", "sleep", "30"], home);
      await until("the session row", async () => (await home.db.exists()) && (await rows(home.db, "SELECT id FROM sessions")).length === 1, { intervalMs: 1 });
      signalPid(run.proc.pid, "SIGTERM", { what: "li" });
      const r = await run.out;
      expect({ round, code: r.code }).toEqual({ round, code: 143 });
      const [session] = await rows<Record<string, unknown>>(home.db, "SELECT status, status_reason_code FROM sessions");
      expect(session).toEqual({ status: "cancelled", status_reason_code: "run.cancelled.sigterm" });
      expect(await rows(home.db, "SELECT id FROM legs WHERE ended_at IS NULL")).toEqual([]);
      expect(fs.readdirSync(path.join(home.runs)).length).toBe(1);
    }
  }, 60_000);

  test("a SIGTERM while the deadline is stopping the command is not lost: the --auto-resume leg after it ends cancelled (li exits 143, not 124)", async () => {
    const home = agentHome();
    const seen = path.join(home.scratch, "signals");
    const ready = path.join(home.scratch, "ready");
    // count-signals records the deadline's SIGTERM, then takes half a second to exit: the deadline, not li's signal, ends leg 1.
    // A deadline the fixture is sure to outlive until its traps are up (a SIGTERM before that kills it
    // unrecorded), and that leaves leg 2 a deadline later than li's signal whenever the test is slow.
    const run = spawnLi(["agent", "--timeout", "2s", "--auto-resume", "1", "--", fixture("count-signals"), seen, ready], home);
    await until("the deadline's SIGTERM to reach the command", () => fs.existsSync(seen) && fs.readFileSync(seen, "utf8").includes("TERM"));
    signalPid(run.proc.pid, "SIGTERM", { what: "li" });
    const r = await run.out;
    expect(r.code).toBe(143);
    const [session] = await rows<Record<string, unknown>>(home.db, "SELECT status, status_reason_code FROM sessions");
    expect(session).toEqual({ status: "cancelled", status_reason_code: "run.cancelled.sigterm" });
    const legs = await rows<{ status: string; deferred: number }>(home.db, "SELECT status, deferred FROM legs ORDER BY seq");
    expect(legs).toEqual([{ status: "timed_out", deferred: 1 }, { status: "cancelled", deferred: 0 }]);
  }, 30_000);
});
