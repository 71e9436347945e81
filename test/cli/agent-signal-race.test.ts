// SIGTERM to dist/li the moment its session row appears (issue 9: li used to die outright there, 12 of 12).

import { describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { agentHome, rows, spawnLi } from "../legs/agent-harness.ts";
import { signalPid, until } from "../helpers/until.ts";

describe("SIGTERM as soon as the session is recorded", () => {
  test("whatever the command's progress, li handles it: the session ends cancelled and li exits 143 (5 rounds)", async () => {
    for (let round = 0; round < 5; round++) {
      const home = agentHome();
      const run = spawnLi(["agent", "--", "sleep", "30"], home);
      await until("the session row", () => fs.existsSync(home.db) && rows(home.db, "SELECT id FROM sessions").length === 1, { intervalMs: 1 });
      signalPid(run.proc.pid, "SIGTERM", { what: "li" });
      const r = await run.out;
      expect({ round, code: r.code }).toEqual({ round, code: 143 });
      const [session] = rows<Record<string, unknown>>(home.db, "SELECT status, status_reason_code FROM sessions");
      expect(session).toEqual({ status: "cancelled", status_reason_code: "run.cancelled.sigterm" });
      expect(rows(home.db, "SELECT id FROM legs WHERE ended_at IS NULL")).toEqual([]);
      expect(fs.readdirSync(path.join(home.runs)).length).toBe(1);
    }
  }, 60_000);
});
