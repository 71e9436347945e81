// A leg owns its whole process tree (SPEC §8.7), end to end: every way of stopping a leg stops what left its
// process group or session too, on both mechanisms (a cgroup of its own, and the LI_LEG_RUN_ID fallback).

import { afterEach, describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { li, LI_BINARY, liEnv } from "../helpers/cli.ts";
import { fixture } from "../helpers/fixtures.ts";
import { agentHome, rows, sessionRow, spawnLi, type AgentHome } from "../legs/agent-harness.ts";
import { commandLine, isAlive, pidInFile, signalPid, until, untilGone } from "../helpers/until.ts";
import { LegCgroup } from "../../src/legs/cgroup.ts";
import { RECORD } from "../notify/helpers.ts";

const SHAPES = ["setsid", "double-fork", "nohup", "closed-pipes"] as const;
type Shape = (typeof SHAPES)[number] | "env-i";

/** Where li can make a cgroup (root, as in CI), the default mechanism is the cgroup; LI_CONTAINMENT=environ forces the fallback. */
const CAN_CGROUP = (() => {
  const probe = LegCgroup.create(`li-test-probe-${process.pid}`);
  if (probe) fs.rmdirSync(probe.dir);
  return probe !== null;
})();
const MECHANISMS = [
  ...(CAN_CGROUP || process.getuid?.() === 0 ? [{ name: "cgroup", env: {} as Record<string, string> }] : []),
  { name: "environ", env: { LI_CONTAINMENT: "environ" } as Record<string, string> },
] as const;

/** The escaped sleep the fixture leaves: its pid file must name a live `sleep 2147483646` (an env -i one carries no token of ours). */
const escapedLeft: number[] = [];
afterEach(() => {
  for (const pid of escapedLeft.splice(0)) if (isEscapedSleep(pid)) process.kill(pid, "SIGKILL");
});

function isEscapedSleep(pid: number): boolean {
  return isAlive(pid) && JSON.stringify(commandLine(pid)) === JSON.stringify(["sleep", "2147483646"]);
}

async function escapedPid(file: string): Promise<number> {
  const pid = await until(`the escaped process's pid in ${file}`, () => {
    const text = fs.readFileSync(file, "utf8");
    return /^[1-9][0-9]*\s*$/.test(text) ? Number(text.trim()) : null;
  });
  // Validated before anything could signal it: the fixture's own sleep, alive (it execs after the pid is written).
  await until(`process ${pid} to be the escaped sleep`, () => isEscapedSleep(pid));
  escapedLeft.push(pid);
  return pid;
}

async function legOf(home: AgentHome, sessionId: string): Promise<Record<string, any>> {
  return until(`the command markers of ${sessionId}`, async () => (await rows<Record<string, any>>(home.db, "SELECT * FROM legs WHERE session_id = ?", sessionId)).find((l) => l.command_pid != null));
}

function containmentEvidence(session: Record<string, any>): Record<string, any> {
  const evidence = JSON.parse(session.status_evidence_refs) as Record<string, any>[];
  const entry = evidence.find((e) => e.kind === "containment");
  if (!entry) throw new Error(`no containment evidence in ${session.status_evidence_refs}`);
  return entry;
}

async function detached(home: AgentHome, shape: Shape, env: Record<string, string>, pidfile: string): Promise<{ id: string; escaped: number }> {
  const started = await li(["agent", "--detach", "--kill-grace", "2", "--", fixture("escape"), shape, pidfile], { home: home.home, env });
  expect(started.code).toBe(0);
  return { id: started.stdout.trim(), escaped: await escapedPid(pidfile) };
}

for (const mechanism of MECHANISMS) {
  describe(`every stop path stops the whole leg (${mechanism.name})`, () => {
    for (const shape of SHAPES) {
      test(`li kill: ${shape}`, async () => {
        const home = agentHome();
        const pidfile = path.join(home.scratch, "escaped");
        const { id, escaped } = await detached(home, shape, mechanism.env, pidfile);
        const killed = await li(["kill", id], { home: home.home });
        expect(killed.code).toBe(0);
        const session = await sessionRow(home.db, id);
        expect(session.status_reason_code).toBe("run.cancelled.manual_kill");
        // The leg ended only once its processes were gone.
        expect(isAlive(escaped)).toBe(false);
        expect(containmentEvidence(session).containment).toBe(mechanism.name);
      }, 60_000);

      test(`--timeout: ${shape}`, async () => {
        const home = agentHome();
        const pidfile = path.join(home.scratch, "escaped");
        const run = spawnLi(["agent", "--timeout", "2", "--kill-grace", "2", "--", fixture("escape"), shape, pidfile], home, { env: mechanism.env });
        const escaped = await escapedPid(pidfile);
        const r = await run.out;
        expect(r.code).toBe(124);
        expect(isAlive(escaped)).toBe(false);
      }, 60_000);

      test(`Ctrl-C under a pseudo-terminal: ${shape}`, async () => {
        const home = agentHome();
        const pidfile = path.join(home.scratch, "escaped");
        const proc = Bun.spawn(["python3", path.join(import.meta.dir, "../legs/pty-ctrl-c.py"), LI_BINARY, "agent", "--kill-grace", "2", "--", fixture("escape"), shape, pidfile], {
          env: { ...liEnv(home.home, mechanism.env), READY: pidfile },
          stdout: "pipe",
          stderr: "pipe",
        });
        const escaped = await escapedPid(pidfile);
        const [out] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
        expect(out.trim()).toBe("130");
        expect(isAlive(escaped)).toBe(false);
      }, 60_000);

      test(`the phantom reaper after kill -9 of the supervisor: ${shape}`, async () => {
        const home = agentHome();
        const pidfile = path.join(home.scratch, "escaped");
        const { id, escaped } = await detached(home, shape, mechanism.env, pidfile);
        const leg = await legOf(home, id);
        // The supervisor's pid from the ledger, checked against its recorded start before the signal.
        const supervisor = await until("the supervisor to be the recorded process", () => isAlive(leg.pid) && commandLine(leg.pid)?.[0] === LI_BINARY && leg.pid);
        signalPid(supervisor, "SIGKILL", { what: "the leg's supervisor" });
        await untilGone(supervisor);
        expect(isEscapedSleep(escaped)).toBe(true);
        const watch = await li(["watch", "--once", "--phantom-grace", "0"], { home: home.home });
        expect(watch.code).toBe(0);
        await untilGone(escaped, "the escaped process to be gone");
        expect((await sessionRow(home.db, id)).status_reason_code).toBe("session.phantom.process_dead");
      }, 60_000);
    }
  });
}

describe("env -i: a process that clears its environment", () => {
  if (MECHANISMS.some((m) => m.name === "cgroup")) {
    test("under a cgroup it is stopped with the leg", async () => {
      const home = agentHome();
      const pidfile = path.join(home.scratch, "escaped");
      const { id, escaped } = await detached(home, "env-i", {}, pidfile);
      expect((await li(["kill", id], { home: home.home })).code).toBe(0);
      expect(isAlive(escaped)).toBe(false);
    }, 60_000);
  }

  test("under the fallback it cannot be found, and the evidence says so", async () => {
    const home = agentHome();
    const pidfile = path.join(home.scratch, "escaped");
    const { id, escaped } = await detached(home, "env-i", { LI_CONTAINMENT: "environ" }, pidfile);
    expect((await li(["kill", id], { home: home.home })).code).toBe(0);
    const evidence = containmentEvidence(await sessionRow(home.db, id));
    expect(evidence.containment).toBe("environ");
    expect(evidence.limits).toContain("env -i");
    expect(isEscapedSleep(escaped)).toBe(true);
  }, 60_000);
});

for (const mechanism of MECHANISMS) {
  describe(`a normal end with a leftover daemon (${mechanism.name})`, () => {
    test("it is listed in the evidence with one warning and left running", async () => {
      const home = agentHome();
      const pidfile = path.join(home.scratch, "escaped");
      const r = await li(["agent", "--json", "--", fixture("escape"), "setsid", pidfile, "exit"], { home: home.home, env: mechanism.env });
      expect(r.code).toBe(0);
      const escaped = pidInFile(pidfile);
      expect(isEscapedSleep(escaped)).toBe(true);
      escapedLeft.push(escaped);
      const warnings = r.stderr.split("\n").filter((l) => l.includes("warning:"));
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toContain(`${escaped} sleep 2147483646`);
      const evidence = containmentEvidence(await sessionRow(home.db, JSON.parse(r.stdout).session_id));
      expect(evidence.containment).toBe(mechanism.name);
      expect(evidence.leftover_processes).toEqual([{ pid: escaped, command: "sleep 2147483646" }]);
      expect(evidence.leftovers_stopped).toBe(false);
    }, 60_000);

    test("with --stop-leftovers it is gone when li exits", async () => {
      const home = agentHome();
      const pidfile = path.join(home.scratch, "escaped");
      const r = await li(["agent", "--json", "--stop-leftovers", "--kill-grace", "1", "--", fixture("escape"), "setsid", pidfile, "exit"], { home: home.home, env: mechanism.env });
      expect(r.code).toBe(0);
      expect(isAlive(pidInFile(pidfile))).toBe(false);
      const evidence = containmentEvidence(await sessionRow(home.db, JSON.parse(r.stdout).session_id));
      expect(evidence.leftovers_stopped).toBe(true);
    }, 60_000);
  });
}

describe("resource use from the kernel", () => {
  test("a leg that allocates ~200 MB shows a peak RSS within 20 % of it; one that burns ~1 s of CPU shows >= 0.8 s user time", async () => {
    const home = agentHome();
    const mb = 200 * 1024 * 1024;
    // vec() grows one string to its size in place: no temporary copy doubles the peak.
    const alloc = await li(["agent", "--json", "--", "perl", "-e", `vec(my $x, ${mb - 1}, 8) = 1;`], { home: home.home });
    expect(alloc.code).toBe(0);
    const burn = await li(["agent", "--json", "--", "perl", "-e", "1 while (times)[0] < 1.0"], { home: home.home });
    expect(burn.code).toBe(0);
    const [allocLeg] = await rows<Record<string, any>>(home.db, "SELECT * FROM legs WHERE session_id = ?", JSON.parse(alloc.stdout).session_id);
    const [burnLeg] = await rows<Record<string, any>>(home.db, "SELECT * FROM legs WHERE session_id = ?", JSON.parse(burn.stdout).session_id);
    expect(Number(allocLeg!.peak_rss_bytes)).toBeGreaterThan(mb * 0.8);
    expect(Number(allocLeg!.peak_rss_bytes)).toBeLessThan(mb * 1.2);
    expect(burnLeg!.cpu_user_seconds).toBeGreaterThanOrEqual(0.8);
    // Shown by li show, human and --json.
    const shown = await li(["show", "--json", JSON.parse(burn.stdout).session_id], { home: home.home });
    expect(JSON.parse(shown.stdout).legs[0].cpu_user_seconds).toBeGreaterThanOrEqual(0.8);
  }, 60_000);
});

describe("--auto-resume and the views", () => {
  for (const mechanism of MECHANISMS) {
    test(`a timed-out leg's escaped process is gone before the continuing leg starts (${mechanism.name})`, async () => {
      const home = agentHome();
      const pidfile = path.join(home.scratch, "escaped");
      const verdict = path.join(home.scratch, "verdict");
      const check = path.join(home.scratch, "check.sh");
      // The continuing leg looks at the first leg's escaped process: gone (or a zombie nobody reaps) is "gone".
      fs.writeFileSync(check, `s=$(awk '{print $3}' /proc/$(cat ${pidfile})/stat 2>/dev/null)\nif [ -z "$s" ] || [ "$s" = Z ]; then echo gone > ${verdict}; else echo alive > ${verdict}; fi\n`);
      const r = await li(["agent", "--timeout", "2", "--kill-grace", "1", "--auto-resume", "1", "--resume-command", `sh ${check}`, "--", fixture("escape"), "setsid", pidfile], { home: home.home, env: mechanism.env });
      escapedLeft.push(pidInFile(pidfile));
      expect(r.code).toBe(0);
      expect(fs.readFileSync(verdict, "utf8").trim()).toBe("gone");
    }, 60_000);
  }

  test("li show names the containment and the resource use; li ls --json and the notice carry resource_use", async () => {
    const home = agentHome();
    const out = path.join(home.scratch, "notice");
    const r = await li(["agent", "--json", "--notify", `${RECORD} ${out}`, "--", "perl", "-e", "1 while (times)[0] < 0.3"], { home: home.home });
    expect(r.code).toBe(0);
    const id = JSON.parse(r.stdout).session_id;
    const shown = await li(["show", id], { home: home.home });
    expect(shown.stdout).toMatch(/contained: +(cgroup \/\S+|environ)/);
    expect(shown.stdout).toMatch(/resources: +cpu \d+\.\d\ds user, \d+\.\d\ds system; peak memory \d+\.\d MiB/);
    const listed = JSON.parse((await li(["ls", "--json"], { home: home.home })).stdout).entities[0];
    expect(listed.resource_use.cpu_user_seconds).toBeGreaterThan(0.2);
    expect(listed.resource_use.peak_rss_bytes).toBeGreaterThan(0);
    const envelope = JSON.parse(fs.readFileSync(`${out}.stdin`, "utf8"));
    expect(envelope.resource_use).toEqual({ cpu_user_seconds: listed.resource_use.cpu_user_seconds, cpu_system_seconds: expect.any(Number), peak_rss_bytes: listed.resource_use.peak_rss_bytes });
  }, 60_000);

  test("--kill-grace takes a DURATION; a bad one is refused before anything runs (exit 2)", async () => {
    const home = agentHome();
    const r = await li(["agent", "--kill-grace", "soon", "--", "true"], { home: home.home });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("--kill-grace");
    expect(fs.existsSync(home.runs)).toBe(false);
  });

  test("agent.kill_grace and agent.stop_leftovers from the settings file", async () => {
    const home = agentHome();
    fs.mkdirSync(home.home, { recursive: true, mode: 0o700 });
    fs.writeFileSync(path.join(home.home, "settings.yaml"), "agent:\n  kill_grace: 1s\n  stop_leftovers: true\n", { mode: 0o600 });
    const pidfile = path.join(home.scratch, "escaped");
    const r = await li(["agent", "--json", "--", fixture("escape"), "setsid", pidfile, "exit"], { home: home.home });
    expect(r.code).toBe(0);
    expect(isAlive(pidInFile(pidfile))).toBe(false);
    const bad = path.join(home.scratch, "bad");
    fs.writeFileSync(path.join(home.home, "settings.yaml"), "agent:\n  stop_leftovers: sometimes\n", { mode: 0o600 });
    const warned = await li(["agent", "--", fixture("escape"), "setsid", bad, "exit"], { home: home.home });
    escapedLeft.push(pidInFile(bad));
    expect(warned.stderr).toContain("agent.stop_leftovers");
  }, 60_000);
});
