// A leg's own cgroup (src/legs/cgroup.ts): found from the mount table whatever the host's layout, made, removed once empty.

import { afterEach, describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { cgroup2Mount, cgroupPids, LegCgroup, ownCgroup, removeEmptyLegCgroups } from "../../src/legs/cgroup.ts";
import { tempDir } from "../helpers/temp-dirs.ts";
import { isAlive, signalPid, untilExeced } from "../helpers/until.ts";

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
    expect(busy.enter()).toBe(true);
    const sleep = Bun.spawn(["sleep", "2147483646"], { stdio: ["ignore", "ignore", "ignore"] });
    expect(busy.leave()).toBe(true);
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
});
