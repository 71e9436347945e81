// The processes of one leg (src/legs/leg-processes.ts): only a process verifiably in the leg is ever signalled.

import { afterEach, describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { containmentMode, spawnContained } from "../../src/legs/leg-processes.ts";
import { LegCgroup } from "../../src/legs/cgroup.ts";
import { readStartTicks } from "../../src/host/proc.ts";
import { tempDir } from "../helpers/temp-dirs.ts";
import { commandLine, isAlive, pidFromFile, signalPid, untilExeced } from "../helpers/until.ts";

const started: number[] = [];
afterEach(() => {
  for (const pid of started.splice(0)) if (isAlive(pid) && commandLine(pid)?.[0] === "sleep") signalPid(pid, "SIGKILL", { what: "a sleep the test started" });
});

const CAN_CGROUP = (() => {
  const probe = LegCgroup.create(`li-test-probe-${process.pid}`);
  if (probe) fs.rmdirSync(probe.dir);
  return probe !== null;
})();

/** A process with the very same command line as the leg's escaped one, started after the leg, in the environment given. */
async function decoy(env: Record<string, string | undefined>): Promise<number> {
  const child = Bun.spawn(["sleep", "2147483646"], { env: env as Record<string, string>, stdio: ["ignore", "ignore", "ignore"], detached: true });
  started.push(child.pid);
  await untilExeced(child.pid, "sleep");
  return child.pid;
}

describe("the processes of a leg", () => {
  for (const mode of ["auto", "environ"] as const) {
    test(`a process of another leg or of nobody with the same command line is never signalled (${mode === "auto" ? "cgroup" : "environ"})`, async () => {
      const dir = tempDir();
      const runId = `decoy-${process.pid}-${mode}`;
      const leg = { runId, supervisorStartTicks: readStartTicks(process.pid), startedAt: Date.now() / 1000 };
      const { LI_LEG_RUN_ID: _, ...nobody } = process.env;
      const otherLeg = await decoy({ ...process.env, LI_LEG_RUN_ID: `other-${runId}` });
      const ofNobody = await decoy(nobody);
      const pidfile = path.join(dir, "escaped");
      const spawned = spawnContained(leg, mode, (cgroup) =>
        Bun.spawn(["sh", "-c", `setsid sleep 2147483646 </dev/null >/dev/null 2>&1 & echo $! > ${pidfile}; exec sleep 2147483646`], {
          env: { ...process.env, LI_LEG_RUN_ID: runId },
          stdio: ["ignore", "ignore", "ignore"],
          detached: true,
          ...(cgroup ? { cgroup } : {}),
        }),
      );
      const { child } = spawned;
      const processes = spawned.processes!;
      started.push(child.pid);
      const escaped = await pidFromFile(pidfile);
      started.push(escaped);
      await untilExeced(escaped, "sleep");
      await untilExeced(child.pid, "sleep");
      if (mode === "auto" && (CAN_CGROUP || process.getuid?.() === 0)) expect(processes.containment).toBe("cgroup");
      if (mode === "environ") expect(processes.containment).toBe("environ");
      expect(processes.list().map((p) => p.pid).sort()).toEqual([child.pid, escaped].sort());

      await processes.stop(2000);
      expect(isAlive(escaped)).toBe(false);
      expect(isAlive(child.pid)).toBe(false);
      expect(isAlive(otherLeg)).toBe(true);
      expect(isAlive(ofNobody)).toBe(true);
      expect(processes.release()).toBe(true);
    }, 30_000);
  }

  test("LI_CONTAINMENT=environ forces the fallback, off leaves only the group; anything else lets li make a cgroup", () => {
    expect(containmentMode({ LI_CONTAINMENT: "environ" })).toBe("environ");
    expect(containmentMode({})).toBe("auto");
    expect(containmentMode({ LI_CONTAINMENT: "" })).toBe("auto");
    expect(containmentMode({ LI_CONTAINMENT: "off" })).toBe("off");
  });
});
