// Stopping a command's group: one cause, one signal, SIGKILL after the grace, never the caller's group.

import { describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { GroupTerminator } from "../../src/legs/signals.ts";
import type { SignalSender } from "../../src/host/proc.ts";
import { spawnCommand } from "../../src/legs/spawn.ts";
import { fixture } from "../helpers/fixtures.ts";
import { tempDir } from "../helpers/ledger.ts";
import { isAlive, pidFromFile, signalPid, until, untilGone } from "../helpers/until.ts";

/** A signal sender for GroupTerminator that shows each signal to `look` first, then sends it to the terminator's own group. */
const passedOn = (look: (pid: number, signal: NodeJS.Signals | number) => unknown): SignalSender => (pid, signal) => (look(pid, signal), process.kill(pid, signal));

const env = () => Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined));

describe("GroupTerminator", () => {
  test("the first cause wins and the group gets its signal once", async () => {
    const dir = tempDir();
    const seen = path.join(dir, "seen");
    const ready = path.join(dir, "ready");
    const child = spawnCommand([fixture("count-signals"), seen, ready], { cwd: dir, env: env(), stdin: "ignore" });
    await until("the command to be ready", () => fs.existsSync(ready));
    const t = new GroupTerminator(child.pid, 10_000);
    t.stop("sigint", "SIGINT");
    t.stop("timeout", "SIGTERM");
    const exit = await child.exited;
    t.dispose();
    expect(t.reason).toBe("sigint");
    expect(fs.readFileSync(seen, "utf8")).toBe("INT\n");
    expect(exit.exitCode).toBe(0);
  });

  test("a command ignoring SIGTERM is killed after the grace", async () => {
    const dir = tempDir();
    const ready = path.join(dir, "ready");
    const child = spawnCommand([fixture("ignore-sigterm"), ready], { cwd: dir, env: env(), stdin: "ignore" });
    await until("the command to be ready", () => fs.existsSync(ready));
    const t = new GroupTerminator(child.pid, 100);
    t.stop("timeout", "SIGTERM");
    expect(await child.exited).toEqual({ exitCode: null, signalCode: "SIGKILL" });
  });

  test("after a stop, a grandchild ignoring SIGTERM still gets the group's SIGKILL once the grace ends, though the leader is gone", async () => {
    const dir = tempDir();
    const pidFile = path.join(dir, "grandchild.pid");
    const child = spawnCommand(["sh", "-c", `sh -c 'trap "" TERM; echo $$ > ${pidFile}; exec sleep 30' & wait`], { cwd: dir, env: env(), stdin: "ignore" });
    const grandchild = await pidFromFile(pidFile, "the grandchild's pid");
    // Whether the grandchild was alive as each signal went out: alive at the SIGKILL shows the SIGTERM left
    // it running, however long this test took to look (a check after the leader's exit failed whenever the
    // test was held up past the grace, the SIGKILL having come first).
    const sent: Array<[NodeJS.Signals | number, boolean]> = [];
    const t = new GroupTerminator(child.pid, 200, passedOn((_pid, signal) => signal === 0 || void sent.push([signal, isAlive(grandchild)])));
    t.stop("timeout", "SIGTERM");
    expect((await child.exited).signalCode).toBe("SIGTERM");
    await t.settle();
    await untilGone(grandchild, "the grandchild to die");
    expect(sent).toEqual([["SIGTERM", true], ["SIGKILL", true]]);
  });

  test("a command that ended on its own leaves its group alone: settle neither waits nor signals", async () => {
    const dir = tempDir();
    const pidFile = path.join(dir, "background.pid");
    const child = spawnCommand(["sh", "-c", `${fixture("forever")} ${pidFile} >/dev/null 2>&1 & exit 0`], { cwd: dir, env: env(), stdin: "ignore" });
    await child.exited;
    const background = await pidFromFile(pidFile, "the background process's pid");
    // Every signal the terminator sends, or probes with, goes through this recorder.
    const sent: Array<[number, NodeJS.Signals | number]> = [];
    const t = new GroupTerminator(child.pid, 100, passedOn((pid, signal) => void sent.push([pid, signal])));
    await t.settle();
    expect(sent).toEqual([]);
    expect(isAlive(background)).toBe(true);
    signalPid(background, "SIGKILL", { what: "the background process" });
  });

  test("the command leads a process group of its own, not the caller's", async () => {
    const child = spawnCommand([fixture("forever")], { cwd: "/", env: env(), stdin: "ignore" });
    const stat = fs.readFileSync(`/proc/${child.pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const pgrp = Number(fields[2]);
    expect(pgrp).toBe(child.pid);
    const own = fs.readFileSync("/proc/self/stat", "utf8");
    expect(Number(own.slice(own.lastIndexOf(")") + 2).split(" ")[2])).not.toBe(pgrp);
    signalPid(child.pid, "SIGKILL", { group: true, what: "the command" });
    await child.exited;
  });
});
