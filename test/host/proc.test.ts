import { afterEach, describe, expect, test } from "bun:test";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Subprocess } from "bun";
import {
  bootId,
  hostId,
  isForegroundOfTerminal,
  killGroup,
  machineId,
  probeProcess,
  processIdentity,
  isUsablePid,
  parseHostOverrides,
  MAX_PID,
  readProcState,
  readStartTicks,
  type SignalSender,
} from "../../src/host/proc.ts";
import { fixture } from "../helpers/fixtures.ts";
import { tempDir as scratchDir } from "../helpers/temp-dirs.ts";
import { pidFromFile, until, validPid } from "../helpers/until.ts";

const started: Subprocess[] = [];

function spawn(argv: string[], detached = false): Subprocess {
  const child = Bun.spawn(argv, { stdin: "ignore", stdout: "pipe", stderr: "ignore", detached });
  started.push(child);
  return child;
}

afterEach(() => {
  for (const child of started.splice(0)) {
    try {
      child.kill("SIGKILL");
    } catch {
      // Already gone.
    }
  }
});

const tempDir = (): string => scratchDir("li-proc-");

/** A /proc tree with one stat file, as the kernel writes it. */
function fakeProc(pid: number | "self", stat: string): string {
  const root = tempDir();
  fs.mkdirSync(path.join(root, String(pid)), { recursive: true });
  fs.writeFileSync(path.join(root, String(pid), "stat"), stat);
  return root;
}

/** A stat line whose fields 3.. are given; the rest are zeros, so field 22 is `startTicks`. */
function statLine(pid: number, comm: string, fields: { state?: string; pgrp?: number; tpgid?: number; startTicks?: number }): string {
  const tail: string[] = Array.from({ length: 50 }, () => "0");
  tail[0] = fields.state ?? "S";
  tail[5 - 3] = String(fields.pgrp ?? 0);
  tail[8 - 3] = String(fields.tpgid ?? -1);
  tail[22 - 3] = String(fields.startTicks ?? 0);
  return `${pid} (${comm}) ${tail.join(" ")}\n`;
}

describe("reading /proc", () => {
  test("a command name with spaces and ')' does not shift the fields", () => {
    const root = fakeProc(4242, statLine(4242, "my (odd) cmd) x", { state: "R", startTicks: 987654 }));
    expect(readStartTicks(4242, root)).toBe(987654);
    expect(readProcState(4242, root)).toBe("R");
  });

  test("a missing process has no start ticks and no state", () => {
    const root = tempDir();
    expect(readStartTicks(4242, root)).toBeNull();
    expect(readProcState(4242, root)).toBeNull();
  });

  test("a garbled stat file yields null rather than a wrong number", () => {
    const root = fakeProc(7, "7 (truncated S 1 2");
    expect(readStartTicks(7, root)).toBeNull();
  });

  test("our own process has start ticks and is running", () => {
    expect(readStartTicks(process.pid)).toBeGreaterThan(0);
    expect(readProcState(process.pid)).toBe("R");
  });
});

describe("host identity", () => {
  test("the boot id is the kernel's, trimmed", () => {
    const root = tempDir();
    fs.mkdirSync(path.join(root, "sys/kernel/random"), { recursive: true });
    fs.writeFileSync(path.join(root, "sys/kernel/random/boot_id"), "abc-123\n");
    expect(bootId(root)).toBe("abc-123");
    expect(bootId()).toBe(fs.readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim());
  });

  test("a boot id that cannot be read falls back to the boot time", () => {
    expect(bootId(tempDir())).toMatch(/^boot-\d+$/);
  });

  test("the machine id comes from the first file that has one, else the host name", () => {
    const dir = tempDir();
    const empty = path.join(dir, "empty");
    const second = path.join(dir, "second");
    fs.writeFileSync(empty, "\n");
    fs.writeFileSync(second, "m-2\n");
    expect(machineId([path.join(dir, "missing"), empty, second])).toBe("m-2");
    expect(machineId([path.join(dir, "missing")])).toBe(os.hostname());
  });

  test("the default places are read once per process; places given are read on every call", () => {
    const first = machineId();
    expect(machineId()).toBe(first);
    const dir = tempDir();
    const file = path.join(dir, "machine-id");
    fs.writeFileSync(file, "m-a\n");
    expect(machineId([file])).toBe("m-a");
    fs.writeFileSync(file, "m-b\n");
    expect(machineId([file])).toBe("m-b");
    expect(machineId()).toBe(first);
  });

  test("the host id joins machine id and boot id", () => {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, "machine-id"), "m-1\n");
    fs.mkdirSync(path.join(dir, "sys/kernel/random"), { recursive: true });
    fs.writeFileSync(path.join(dir, "sys/kernel/random/boot_id"), "b-1\n");
    expect(hostId({ procRoot: dir, machineIdPaths: [path.join(dir, "machine-id")] })).toBe("m-1:b-1");
    expect(hostId()).toBe(`${machineId()}:${bootId()}`);
  });

  test("the current process identity names our pid, start ticks and host", () => {
    const identity = processIdentity();
    expect(identity.pid).toBe(process.pid);
    expect(identity.startTicks).toBe(readStartTicks(process.pid));
    expect(identity.bootId).toBe(bootId());
    expect(identity.hostId).toBe(hostId());
  });
});

describe("probing a recorded process", () => {
  test("a running sleep is alive with its own start ticks", () => {
    const child = spawn(["sleep", "30"]);
    const ticks = readStartTicks(child.pid);
    expect(ticks).not.toBeNull();
    expect(probeProcess(child.pid, ticks)).toBe("alive");
  });

  // Issue 10: without recorded start ticks any live pid (pid 1 included) looked "alive", and li kill signalled it.
  test("a running process with no recorded start ticks is unverified, never alive", () => {
    const child = spawn(["sleep", "30"]);
    expect(probeProcess(child.pid, null)).toBe("unverified");
    expect(probeProcess(1, null)).toBe("unverified");
  });

  test("the same pid with other start ticks has been reused", () => {
    const child = spawn(["sleep", "30"]);
    const ticks = readStartTicks(child.pid) ?? 0;
    expect(probeProcess(child.pid, ticks + 1)).toBe("reused");
  });

  test("an exited and reaped process is dead", async () => {
    const child = spawn(["sleep", "30"]);
    const ticks = readStartTicks(child.pid);
    child.kill("SIGKILL");
    await child.exited;
    expect(probeProcess(child.pid, ticks)).toBe("dead");
  });

  test("a zombie is dead although the pid still answers signals", async () => {
    // The shell's background child blocks on a FIFO until the shell has become `sleep`, which never
    // reaps: released only then, the child is certain to stay a zombie (a shell might reap it itself).
    const fifo = path.join(tempDir(), "release");
    expect(Bun.spawnSync(["mkfifo", fifo]).exitCode).toBe(0);
    const parent = spawn(["sh", "-c", '{ read _ < "$1"; } & echo "$!"; exec sleep 30', "sh", fifo]);
    const { value } = await (parent.stdout as ReadableStream<Uint8Array>).getReader().read();
    const zombie = validPid(new TextDecoder().decode(value), "the shell's background child");
    await until("the shell to become sleep", () => fs.readFileSync(`/proc/${parent.pid}/comm`, "utf8").trim() === "sleep");
    fs.writeFileSync(fifo, "go\n");
    await until(`the background child ${zombie} to become a zombie`, () => readProcState(zombie) === "Z");
    expect(process.kill(zombie, 0)).toBe(true);
    expect(probeProcess(zombie, null)).toBe("dead");
    expect(probeProcess(zombie, readStartTicks(zombie))).toBe("dead");
  });

  test("a process we may not signal (EPERM) is still judged by its /proc start time", () => {
    const eperm: SignalSender = () => {
      throw Object.assign(new Error("kill EPERM"), { code: "EPERM" });
    };
    const root = fakeProc(4242, statLine(4242, "other user's", { state: "S", startTicks: 500 }));
    expect(probeProcess(4242, 500, { procRoot: root, sendSignal: eperm })).toBe("alive");
    expect(probeProcess(4242, 501, { procRoot: root, sendSignal: eperm })).toBe("reused");
    const zombieRoot = fakeProc(4242, statLine(4242, "z", { state: "Z", startTicks: 500 }));
    expect(probeProcess(4242, 500, { procRoot: zombieRoot, sendSignal: eperm })).toBe("dead");
  });

  test("an existing process that /proc hides is unverified, neither dead nor alive (its start time cannot be matched)", () => {
    const exists: SignalSender = () => true;
    expect(probeProcess(4242, 500, { procRoot: tempDir(), sendSignal: exists })).toBe("unverified");
  });

  test("pid 0, negative pids and pids beyond any process id are refused, since kill would address a group or throw a type error", () => {
    expect(() => probeProcess(0, null)).toThrow(RangeError);
    expect(() => probeProcess(-5, null)).toThrow(RangeError);
    expect(() => probeProcess(99_999_999_999, 1)).toThrow(RangeError);
    expect(isUsablePid(MAX_PID)).toBe(true);
    expect(isUsablePid(MAX_PID + 1)).toBe(false);
    expect(isUsablePid(99_999_999_999)).toBe(false);
  });
});

describe("terminal foreground", () => {
  test("our group is foreground when it equals the terminal's foreground group", () => {
    expect(isForegroundOfTerminal(fakeProc("self", statLine(1, "li", { pgrp: 300, tpgid: 300 })))).toBe(true);
    expect(isForegroundOfTerminal(fakeProc("self", statLine(1, "li", { pgrp: 300, tpgid: 301 })))).toBe(false);
    expect(isForegroundOfTerminal(fakeProc("self", statLine(1, "li", { pgrp: 300, tpgid: -1 })))).toBe(false);
  });

  const program = `import { isForegroundOfTerminal } from ${JSON.stringify(path.resolve(import.meta.dir, "../../src/host/proc.ts"))}; console.log(isForegroundOfTerminal() ? "foreground" : "not foreground");`;

  test("a program run in a pseudo-terminal by `script` is in the foreground", () => {
    const dir = tempDir();
    const file = path.join(dir, "fg.ts");
    fs.writeFileSync(file, program);
    const run = Bun.spawnSync(["script", "-qec", `${JSON.stringify(process.execPath)} ${JSON.stringify(file)}`, "/dev/null"], { stdin: "ignore" });
    expect(run.stdout.toString()).toContain("foreground");
    expect(run.stdout.toString()).not.toContain("not foreground");
  });

  test("a program in a new session has no terminal and is not in the foreground", () => {
    const dir = tempDir();
    const file = path.join(dir, "fg.ts");
    fs.writeFileSync(file, program);
    const run = Bun.spawnSync(["setsid", "-w", process.execPath, file], { stdin: "ignore" });
    expect(run.stdout.toString().trim()).toBe("not foreground");
  });
});

describe("signalling a process group", () => {
  test("a group signal reaches the fixture and reports delivery", async () => {
    const dir = tempDir();
    const log = path.join(dir, "signals");
    const ready = path.join(dir, "ready");
    const child = spawn([fixture("count-signals"), log, ready], true);
    await until("the fixture to be ready", () => fs.existsSync(ready));
    expect(killGroup(child.pid, "SIGTERM")).toBe(true);
    expect(await child.exited).toBe(0);
    expect(fs.readFileSync(log, "utf8")).toBe("TERM\n");
  });

  test("a group that ignores SIGTERM survives it and falls to SIGKILL", async () => {
    const dir = tempDir();
    const ready = path.join(dir, "ready");
    const child = spawn([fixture("ignore-sigterm"), ready], true);
    await until("the fixture to be ready", () => fs.existsSync(ready));
    const ticks = readStartTicks(child.pid);
    expect(killGroup(child.pid, "SIGTERM")).toBe(true);
    expect(probeProcess(child.pid, ticks)).toBe("alive");
    expect(killGroup(child.pid, "SIGKILL")).toBe(true);
    expect(await child.exited).not.toBe(0);
    expect(child.signalCode).toBe("SIGKILL");
  });

  test("a group that no longer exists reports false", async () => {
    const child = spawn([fixture("exit-with"), "0"], true);
    await child.exited;
    expect(killGroup(child.pid, "SIGTERM")).toBe(false);
  });

  test("groups 0 and 1 are refused: they mean our own group and every process", () => {
    expect(() => killGroup(0, "SIGTERM")).toThrow(RangeError);
    expect(() => killGroup(1, "SIGTERM")).toThrow(RangeError);
  });

  test("the pid written by the forever fixture is the process that runs", async () => {
    const dir = tempDir();
    const pidFile = path.join(dir, "pid");
    const child = spawn([fixture("forever"), pidFile], true);
    expect(await pidFromFile(pidFile, "the forever fixture's pid")).toBe(child.pid);
    expect(killGroup(child.pid, "SIGTERM")).toBe(true);
    await child.exited;
    expect(probeProcess(child.pid, null)).toBe("dead");
  });
});

describe("host overrides (LI_HOST_ID, LI_HOST_NAME)", () => {
  test("unset or empty: nothing overridden; set: the values as given (the name trimmed)", () => {
    expect(parseHostOverrides({})).toEqual({ machineId: null, hostName: null });
    expect(parseHostOverrides({ LI_HOST_ID: "", LI_HOST_NAME: " " })).toEqual({ machineId: null, hostName: null });
    expect(parseHostOverrides({ LI_HOST_ID: "ci-runner-7.pool_b", LI_HOST_NAME: " build box 7 " })).toEqual({ machineId: "ci-runner-7.pool_b", hostName: "build box 7" });
  });

  test("an id with ':' (the boot separator), a leading '-', a space or 129 characters, and a name with a control character are refused naming the variable", () => {
    for (const id of ["a:b", "-a", "a b", "x".repeat(129), "é"]) expect(() => parseHostOverrides({ LI_HOST_ID: id })).toThrow(/^LI_HOST_ID: /);
    expect(parseHostOverrides({ LI_HOST_ID: "x".repeat(128) }).machineId).toHaveLength(128);
    for (const name of ["a\nb", "a\u001bb", "n".repeat(256)]) expect(() => parseHostOverrides({ LI_HOST_NAME: name })).toThrow(/^LI_HOST_NAME: /);
  });
});
