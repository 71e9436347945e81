// The suite's waiting and pid helpers (test/helpers/until.ts, test/helpers/race.ts) do what the suite relies on.

import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { assertEachOverlapped } from "../helpers/race.ts";
import { fixture } from "../helpers/fixtures.ts";
import { tempDir } from "../helpers/ledger.ts";
import { isAlive, isOurs, NeverHappens, overlapMs, OWNER_VARIABLE, pidFromFile, pidInFile, signalPid, until, untilExeced, untilGone, validPid } from "../helpers/until.ts";

describe("until", () => {
  test("returns the probe's first truthy value; a throwing probe counts as not yet", async () => {
    let calls = 0;
    const value = await until("the third call", () => {
      calls++;
      if (calls === 1) throw new Error("half written");
      return calls >= 3 ? `call ${calls}` : null;
    }, { intervalMs: 1 });
    expect(value).toBe("call 3");
  });

  test("fails loudly at the deadline, naming what was awaited and the last error", async () => {
    const failure = until("a thing that never comes", () => {
      throw new Error("still missing");
    }, { timeoutMs: 30, intervalMs: 5 });
    await expect(failure).rejects.toThrow("timed out after 30 ms waiting for a thing that never comes (last error: still missing)");
  });

  test("NeverHappens fails at once: a wait that ran to its deadline would outlive the test's own timeout", async () => {
    await expect(until("the worker's line", () => {
      throw new NeverHappens("the worker exited 1");
    }, { timeoutMs: 10 * 60_000 })).rejects.toThrow("waiting for the worker's line: the worker exited 1");
  });
});

describe("pids", () => {
  test("validPid refuses 0, negatives, fractions, empty text and pids that are gone", async () => {
    for (const raw of ["0", "-1", "-42", "1.5", "", " ", "12abc", null, undefined]) expect(() => validPid(raw)).toThrow(/not a positive integer/);
    const child = Bun.spawn(["true"]);
    await child.exited;
    expect(() => validPid(child.pid)).toThrow(/is not a live process/);
  });

  test("validPid accepts a child of ours and refuses a process this run did not start (pid 1)", async () => {
    const child = Bun.spawn(["sleep", "30"]);
    try {
      expect(validPid(String(child.pid))).toBe(child.pid);
      expect(isOurs(child.pid)).toBe(true);
      expect(isOurs(1)).toBe(false);
      expect(() => validPid(1)).toThrow(/not a process this test run started/);
    } finally {
      child.kill("SIGKILL");
      await child.exited;
    }
  });

  test("an orphan that carries our environment is still ours; one started without it is not", async () => {
    const dir = tempDir();
    const withToken = join(dir, "with");
    const without = join(dir, "without");
    // The shells exit at once, so each sleep is reparented away from us.
    await Bun.spawn(["sh", "-c", `sleep 30 & echo $! > ${withToken}`], { env: process.env }).exited;
    await Bun.spawn(["sh", "-c", `sleep 30 & echo $! > ${without}`], { env: { PATH: process.env.PATH ?? "/usr/bin:/bin" } }).exited;
    const ours = pidInFile(withToken);
    const stranger = pidInFile(without);
    try {
      expect(await pidFromFile(withToken)).toBe(ours);
      expect(() => validPid(stranger)).toThrow(/not a process this test run started/);
      expect(() => signalPid(stranger, "SIGKILL")).toThrow(/not a process this test run started/);
      expect(isAlive(stranger)).toBe(true);
    } finally {
      signalPid(ours, "SIGKILL");
      process.kill(stranger, "SIGKILL"); // the stranger this test just started without the token
    }
    await untilGone(ours);
  });

  test("an orphan of ours caught inside execve is still ours: an empty /proc/PID/environ means not yet, not a stranger", async () => {
    const dir = tempDir();
    const pidFile = join(dir, "pid");
    // The shell exits at once, so the chain is reparented away from us and only its token names it ours.
    // The chain is far longer than the test needs (it is killed below): the test probes until it has caught
    // the chain inside an exec three times, however fast this machine runs execs. A chain of 400 could end
    // first: measured here, as few as 2 of some 3,000 probes of one landed in an exec window.
    await Bun.spawn(["sh", "-c", `${fixture("exec-chain")} 1000000 ${pidFile} ${join(dir, "done")} >/dev/null 2>&1 & exit 0`], { env: process.env }).exited;
    const pid = await pidFromFile(pidFile, "the chain's pid");
    let emptyReads = 0;
    let accepted = 0;
    const refusals: string[] = [];
    try {
      await until("the probes to catch the chain inside an exec three times", () => {
        // The raw read the helper used to trust: it proves this test probed inside the exec windows.
        if (readFileSync(`/proc/${pid}/environ`, "latin1") === "") emptyReads++;
        try {
          validPid(pid, "the chain");
          accepted++;
        } catch (error) {
          refusals.push((error as Error).message);
        }
        return emptyReads >= 3;
      }, { intervalMs: 0 });
      expect(refusals).toEqual([]);
      expect(accepted).toBeGreaterThan(0);
    } finally {
      signalPid(pid, "SIGKILL", { what: "the chain" });
    }
    await untilGone(pid);
  });

  test("untilExeced returns only once the process runs the program with its environment readable, through a chain of execs", async () => {
    const dir = tempDir();
    const pidFile = join(dir, "pid");
    const done = join(dir, "done");
    const chain = Bun.spawn([fixture("exec-chain"), "50", pidFile, done], { env: process.env, stdout: "ignore", stderr: "ignore" });
    try {
      const pid = await pidFromFile(pidFile, "the chain's pid");
      await untilExeced(pid, "sleep");
      // The chain creates `done` right before its last exec (of sleep): the wait outlasted every earlier image.
      expect(existsSync(done)).toBe(true);
      expect(readFileSync(`/proc/${pid}/comm`, "utf8").trim()).toBe("sleep");
      expect(readFileSync(`/proc/${pid}/environ`, "latin1").split("\0")).toContain(`${OWNER_VARIABLE}=${process.env[OWNER_VARIABLE]}`);
    } finally {
      chain.kill("SIGKILL");
      await chain.exited;
    }
    await expect(untilExeced(chain.pid, "sleep")).rejects.toThrow(/is gone/);
  });

  test("signalPid with group refuses a pid that leads no group of its own", async () => {
    const child = Bun.spawn(["sleep", "30"]); // in our group, not its own
    try {
      expect(() => signalPid(child.pid, "SIGKILL", { group: true })).toThrow(/does not lead its own process group/);
    } finally {
      child.kill("SIGKILL");
      await child.exited;
    }
  });

  test("pidInFile refuses a missing, empty or partial file", () => {
    const dir = tempDir();
    expect(() => pidInFile(join(dir, "none"))).toThrow(/was never written/);
    writeFileSync(join(dir, "empty"), "");
    expect(() => pidInFile(join(dir, "empty"))).toThrow(/holds no whole positive pid/);
    writeFileSync(join(dir, "zero"), "0\n");
    expect(() => pidInFile(join(dir, "zero"))).toThrow(/holds no whole positive pid/);
  });
});

describe("overlaps", () => {
  test("overlapMs is positive only when every contender entered before any left", () => {
    expect(overlapMs([{ enteredAt: 0, leftAt: 10 }, { enteredAt: 5, leftAt: 20 }])).toBe(5);
    expect(overlapMs([{ enteredAt: 0, leftAt: 10 }, { enteredAt: 10, leftAt: 20 }])).toBe(0);
    expect(overlapMs([{ enteredAt: 0, leftAt: 10 }, { enteredAt: 12, leftAt: 20 }])).toBeLessThan(0);
    expect(() => overlapMs([{ enteredAt: 0, leftAt: 1 }])).toThrow(/at least two/);
  });

  test("assertEachOverlapped fails for a contender that raced nobody", () => {
    assertEachOverlapped([{ enteredAt: 0, leftAt: 50 }, { enteredAt: 1, leftAt: 2 }, { enteredAt: 40, leftAt: 60 }]);
    expect(() => assertEachOverlapped([{ enteredAt: 0, leftAt: 10 }, { enteredAt: 5, leftAt: 20 }, { enteredAt: 30, leftAt: 40 }])).toThrow(/contender 2 raced nobody/);
  });
});
