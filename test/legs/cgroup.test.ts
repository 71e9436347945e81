// A leg's own cgroup (src/legs/cgroup.ts): found from the mount table whatever the host's layout, made, removed once empty.

import { afterEach, describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { cgroup2Mount, cgroupPids, LegCgroup, LI_SLICE, ownCgroup, removeEmptyLegCgroups } from "../../src/legs/cgroup.ts";
import { spawnContained } from "../../src/legs/leg-processes.ts";
import { readStartTicks } from "../../src/host/proc.ts";
import { tempDir } from "../helpers/temp-dirs.ts";
import { agentHome, rows } from "./agent-harness.ts";
import { legAt } from "./leg-at.ts";
import { isAlive, pidFromFile, signalPid, untilExeced } from "../helpers/until.ts";

const started: number[] = [];
afterEach(() => {
  for (const pid of started.splice(0)) if (isAlive(pid)) signalPid(pid, "SIGKILL", { what: "a sleep the test put in a cgroup" });
});

describe("the cgroup2 hierarchy", () => {
  test("is found in the mount table: a hybrid host's /sys/fs/cgroup/unified, a unified host's /sys/fs/cgroup, none without cgroup2", () => {
    const dir = tempDir();
    const hybrid = path.join(dir, "hybrid");
    fs.writeFileSync(hybrid, "tmpfs /sys/fs/cgroup tmpfs rw 0 0\ncgroup /sys/fs/cgroup/memory cgroup rw,memory 0 0\ncgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n");
    const unified = path.join(dir, "unified");
    fs.writeFileSync(unified, "proc /proc proc rw 0 0\ncgroup2 /sys/fs/cgroup cgroup2 rw,nsdelegate 0 0\n");
    const none = path.join(dir, "none");
    fs.writeFileSync(none, "cgroup /sys/fs/cgroup/cpu cgroup rw,cpu 0 0\n");
    expect(cgroup2Mount({ mountsFile: hybrid })).toBe("/sys/fs/cgroup/unified");
    expect(cgroup2Mount({ mountsFile: unified })).toBe("/sys/fs/cgroup");
    expect(cgroup2Mount({ mountsFile: none })).toBeNull();
  });

  test("li's own cgroup is the 0:: line of /proc/self/cgroup", () => {
    const root = tempDir();
    fs.mkdirSync(path.join(root, "self"));
    fs.writeFileSync(path.join(root, "self/cgroup"), "4:memory:/x\n0::/user.slice/user-1000.slice/user@1000.service/app.slice/li.scope\n");
    expect(ownCgroup(root)).toBe("/user.slice/user-1000.slice/user@1000.service/app.slice/li.scope");
  });
});

const probe = LegCgroup.create(`li-test-probe-${process.pid}`);
if (probe) fs.rmdirSync(probe.dir);

describe.if(probe !== null)("leg cgroups (where li can make one)", () => {
  test("an empty leg cgroup past the age is removed; one still holding a process, or too young, is kept", async () => {
    const busy = LegCgroup.create(`li-test-busy-${process.pid}`)!;
    const empty = LegCgroup.create(`li-test-empty-${process.pid}`)!;
    const sleep = Bun.spawn(["sleep", "2147483646"], { stdio: ["ignore", "ignore", "ignore"], cgroup: busy.dir });
    started.push(sleep.pid);
    await untilExeced(sleep.pid, "sleep");
    expect(cgroupPids(busy.dir)).toEqual([sleep.pid]);
    // Only this test's cgroups: other legs on the machine keep theirs, however young.
    const ours = { only: (name: string) => name.endsWith(`-${process.pid}`) };
    // Too young for an hour's age: nothing goes.
    expect(removeEmptyLegCgroups(3600, Date.now(), ours)).toEqual([]);
    const removed = removeEmptyLegCgroups(0, Date.now(), ours);
    expect(removed).toEqual([empty.dir]);
    expect(fs.existsSync(busy.dir)).toBe(true);
    signalPid(sleep.pid, "SIGKILL", { what: "the sleep in the busy cgroup" });
    await sleep.exited;
    expect(removeEmptyLegCgroups(0, Date.now(), ours)).toEqual([busy.dir]);
  });
  test("a leg killed (kill -9) after its cgroup was made, before its command was born in it, leaves it empty, and the sweep removes it", async () => {
    const home = agentHome();
    const leg = legAt(home, "atSpawn", "die", ["true"]);
    const r = await leg.out;
    expect(r.signal).toBe("SIGKILL");
    // The setup committed: the leg row names its run id, and so its cgroup's name.
    const [row] = await rows<{ run_id: string; command_pid: number | null }>(home.db, "SELECT run_id, command_pid FROM legs");
    expect(row?.command_pid).toBeNull();
    const runId = row!.run_id;
    const mount = cgroup2Mount()!;
    const dir = [path.join(mount, LI_SLICE, runId), path.join(mount, ownCgroup()!, LI_SLICE, runId)].find((d) => fs.existsSync(d));
    if (!dir) throw new Error(`no cgroup left for ${runId}`);
    // Nothing ran in it: the command was never started, and li itself never enters a leg's cgroup.
    expect(cgroupPids(dir)).toEqual([]);
    // The sweep li watch runs (at an age of 0 here, instead of its minute).
    expect(removeEmptyLegCgroups(0, Date.now(), { only: (name) => name === runId })).toEqual([dir]);
    expect(fs.existsSync(dir)).toBe(false);
  }, 30_000);

  test("a command is born in its leg's cgroup: its first instruction, and a double fork it makes at once, are inside", async () => {
    const dir = tempDir();
    const runId = `li-test-born-${process.pid}`;
    const leg = { runId, supervisorStartTicks: readStartTicks(process.pid), startedAt: Date.now() / 1000 };
    const pidfile = path.join(dir, "grandchild");
    const before = ownCgroup();
    const { child, processes } = spawnContained(leg, "auto", (cgroup) =>
      Bun.spawn(["sh", "-c", `cat /proc/self/cgroup; (setsid sleep 2147483646 </dev/null >/dev/null 2>&1 & echo $! > ${pidfile}) &`], {
        env: { ...process.env },
        stdio: ["ignore", "pipe", "ignore"],
        detached: true,
        ...(cgroup ? { cgroup } : {}),
      }),
    );
    const cgroup = processes!.scope.cgroup!;
    try {
      expect(processes!.containment).toBe("cgroup");
      // cat is the command's first child: the shell was inside before it could fork.
      const own = (await new Response(child.stdout).text()).split("\n").find((l) => l.startsWith("0::"));
      expect(path.join(cgroup2Mount()!, own!.slice(3))).toBe(cgroup);
      await child.exited;
      const grandchild = await pidFromFile(pidfile);
      started.push(grandchild);
      expect(cgroupPids(cgroup)).toContain(grandchild);
      // li stayed where it was all along.
      expect(ownCgroup()).toBe(before);
      await processes!.stop(2000);
      expect(isAlive(grandchild)).toBe(false);
      expect(processes!.release()).toBe(true);
    } finally {
      // A failed assertion above leaves nothing of the leg behind: what is still in its cgroup is the leg's.
      if (fs.existsSync(cgroup)) {
        await processes!.stop(2000);
        processes!.release();
      }
    }
  }, 30_000);

  test("a spawn the kernel refuses into the cgroup runs under the fallback, and the cgroup it was given is removed", async () => {
    const runId = `li-test-refused-${process.pid}`;
    const leg = { runId, supervisorStartTicks: readStartTicks(process.pid), startedAt: Date.now() / 1000 };
    let given: string | null = null;
    const { child, processes } = spawnContained(leg, "auto", (cgroup) => {
      if (cgroup) {
        given = cgroup;
        throw Object.assign(new Error("clone3: Device or resource busy"), { code: "EBUSY" });
      }
      return Bun.spawn(["true"], { stdio: ["ignore", "ignore", "ignore"], env: { LI_LEG_RUN_ID: runId } });
    });
    await child.exited;
    expect(given).not.toBeNull();
    expect(fs.existsSync(given!)).toBe(false);
    expect(processes!.containment).toBe("environ");
  });

  test("a command that cannot start fails with its own error, not the cgroup's", () => {
    const leg = { runId: `li-test-missing-${process.pid}`, supervisorStartTicks: readStartTicks(process.pid), startedAt: Date.now() / 1000 };
    let tries = 0;
    expect(() =>
      spawnContained(leg, "auto", (cgroup) => {
        tries++;
        return Bun.spawn(["li-test-no-such-command"], { stdio: ["ignore", "ignore", "ignore"], ...(cgroup ? { cgroup } : {}) });
      }),
    ).toThrow(/li-test-no-such-command/);
    expect(tries).toBeGreaterThanOrEqual(1);
    expect(fs.existsSync(path.join(cgroup2Mount()!, LI_SLICE, leg.runId))).toBe(false);
  });
});
