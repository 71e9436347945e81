// Issue 10 / SPEC §18 end to end through dist/li: each row of the issue's table, reproduced as an attacker or a careless user would.

import { describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { li, LI_BINARY, liEnv } from "../helpers/cli.ts";
import { fixture } from "../helpers/fixtures.ts";
import { tempLedger } from "../helpers/ledger.ts";
import { HERE, insertSession } from "../helpers/sweep-fixtures.ts";
import { until } from "../helpers/until.ts";
import { agentHome, rows, sessionRow } from "../legs/agent-harness.ts";

/** The evidence that decided the outcome: without the containment entry every leg's evidence ends with. */
const outcomeEvidence = (refs: string) => (JSON.parse(refs) as Record<string, any>[]).filter((e) => e.kind !== "containment");

async function agent(args: string[], opts: { home?: ReturnType<typeof agentHome>; env?: Record<string, string | undefined>; cwd?: string } = {}) {
  const home = opts.home ?? agentHome();
  const result = await li(["agent", "--json", ...args], { home: home.home, ...(opts.env ? { env: opts.env } : {}), ...(opts.cwd ? { cwd: opts.cwd } : {}) });
  const record = result.stdout.trim() ? JSON.parse(result.stdout) : null;
  return { ...result, record, home };
}

describe("durations past a timer's limit (§18)", () => {
  // Today's bug: a 30-day timer overflowed setTimeout and fired after 1 ms, so `sleep 1` timed out.
  test("--timeout 30d does not fire early: the command completes", async () => {
    const r = await agent(["--timeout", "30d", "--", "sleep", "1"]);
    expect(r.stderr).not.toContain("TimeoutOverflowWarning");
    expect(r.code).toBe(0);
    expect((await sessionRow(r.home.db, r.record.session_id)).status).toBe("completed");
  });

  test("agent.timeout: 30d from settings does not fire early either", async () => {
    const home = agentHome();
    fs.mkdirSync(home.home, { recursive: true });
    fs.writeFileSync(path.join(home.home, "settings.yaml"), "agent:\n  timeout: 30d\n");
    const r = await agent(["--", "sleep", "1"], { home });
    expect(r.stderr).not.toContain("TimeoutOverflowWarning");
    expect(r.code).toBe(0);
  });

  test("--timeout past 365 days is a usage error naming the flag; nothing is created", async () => {
    const home = agentHome();
    const r = await agent(["--timeout", "366d", "--", fixture("exit-with"), "0"], { home });
    expect(r.code).toBe(2);
    expect(r.stderr.trim()).toBe('li: --timeout: "366d" is longer than the maximum of 365d');
    expect((await home.db.exists())).toBe(false);
  });

  test("agent.timeout past 365 days warns naming the key and the leg runs without a deadline", async () => {
    const home = agentHome();
    fs.mkdirSync(home.home, { recursive: true });
    fs.writeFileSync(path.join(home.home, "settings.yaml"), "agent:\n  timeout: 400d\n");
    const r = await agent(["--", fixture("exit-with"), "0"], { home });
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("agent.timeout");
    expect(r.stderr).toContain("longer than the maximum of 365d; using the default");
  });

  test.each([
    ["wait", "--timeout"],
    ["wait", "--interval"],
    ["kill", "--grace"],
    ["watch", "--sweep-interval"],
    ["watch", "--phantom-grace"],
  ])("li %s %s past 365 days is a usage error naming the flag", async (command, flag) => {
    const home = agentHome();
    const r = await li([command, flag, "400d", ...(command === "watch" ? [] : ["some-id"])], { home: home.home });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`${flag}: "400d" is longer than the maximum of 365d`);
  });
});

describe("files someone else could have made (§18)", () => {
  // Today: li followed the symlink and read /dev/zero until it held 16.8 GB.
  test("an escalation file that is a symlink to /dev/zero is refused at once and recorded as escalation evidence", async () => {
    const r = await agent(["--", "sh", "-c", 'ln -s /dev/zero "$LI_ESCALATE_FILE"']);
    expect(r.code).toBe(1);
    const s = await sessionRow(r.home.db, r.record.session_id);
    expect([s.status, s.status_reason_code]).toEqual(["failed", "run.failed.escalated"]);
    const evidence = outcomeEvidence(s.status_evidence_refs);
    expect(evidence).toHaveLength(1);
    expect(evidence[0]!.kind).toBe("escalation_refused");
    expect(evidence[0]!.problem).toEndWith("escalations.jsonl is a symbolic link (not followed)");
    expect(r.stderr).toContain("is a symbolic link (not followed); recorded as escalation evidence");
  });

  // Today: open() on the FIFO blocked for good (and ignored SIGTERM).
  test("an escalation file that is a FIFO does not block the teardown", async () => {
    const r = await agent(["--", "sh", "-c", 'mkfifo "$LI_ESCALATE_FILE"']);
    expect(r.code).toBe(1);
    const evidence = outcomeEvidence((await sessionRow(r.home.db, r.record.session_id)).status_evidence_refs);
    expect(evidence[0]!.problem).toEndWith("escalations.jsonl is a FIFO, not a regular file");
  });

  // Today: a 1 MB escalation file became a 16.5 MB status_evidence_refs.
  test("escalation evidence is bounded: 64 entries, reasons cut to 4 KiB, a count of the rest", async () => {
    const r = await agent(["--", "sh", "-c", 'i=0; while [ $i -lt 300 ]; do echo "{\\"reason\\": \\"r$i\\"}"; i=$((i+1)); done > "$LI_ESCALATE_FILE"; head -c 20000 /dev/zero | tr "\\0" x >> "$LI_ESCALATE_FILE"']);
    expect(r.code).toBe(1);
    const s = await sessionRow(r.home.db, r.record.session_id);
    const evidence = outcomeEvidence(s.status_evidence_refs);
    expect(evidence).toHaveLength(65);
    expect(evidence[63]).toEqual({ kind: "escalation", reason: "r63" });
    expect(evidence[64]).toEqual({ kind: "escalation_dropped", dropped: 301 - 64, kept: 64 });
    const transition = (await rows<{ evidence_refs: string }>(r.home.db, "SELECT evidence_refs FROM status_transitions WHERE entity_id = ? AND status = 'failed'", r.record.session_id))[0]!;
    expect(transition.evidence_refs.length).toBeLessThan(64 * 4096);
  });

  test("an escalation file over 1 MiB is refused as evidence, not read", async () => {
    const r = await agent(["--", "sh", "-c", 'head -c 2000000 /dev/zero | tr "\\0" "\\n" > "$LI_ESCALATE_FILE"']);
    expect(r.code).toBe(1);
    const evidence = outcomeEvidence((await sessionRow(r.home.db, r.record.session_id)).status_evidence_refs);
    expect(evidence).toEqual([{ kind: "escalation_refused", problem: expect.stringContaining("is larger than 1 MiB (2000000 bytes)") }]);
  });

  // Today: --playbook on a FIFO hung in open().
  test("--playbook on a FIFO or a symlink is a usage error naming the file; nothing is created", async () => {
    const home = agentHome();
    const fifo = path.join(home.scratch, "playbook.yaml");
    expect(Bun.spawnSync(["mkfifo", fifo]).exitCode).toBe(0);
    let r = await agent(["--playbook", fifo, "--", fixture("exit-with"), "0"], { home });
    expect(r.code).toBe(2);
    expect(r.stderr.trim()).toBe(`li: --playbook: ${fifo} is a FIFO, not a regular file`);
    const link = path.join(home.scratch, "link.yaml");
    fs.symlinkSync("/etc/hostname", link);
    r = await agent(["--playbook", link, "--", fixture("exit-with"), "0"], { home });
    expect(r.code).toBe(2);
    expect(r.stderr.trim()).toBe(`li: --playbook: ${link} is a symbolic link (not followed)`);
    expect((await home.db.exists())).toBe(false);
  });

  // Today: `--playbook /etc/shadow` was read and silently ignored. Now: one line naming the file, never its content.
  test("--playbook on a file that declares no artifacts (an /etc/shadow look-alike) warns naming it, without printing it", async () => {
    const home = agentHome();
    const file = path.join(home.scratch, "shadow");
    fs.writeFileSync(file, "root:$6$salt$SECRETHASH:19000:0:99999:7:::\ndaemon:*:19000:0:99999:7:::\n");
    const r = await agent(["--playbook", file, "--", fixture("exit-with"), "0"], { home });
    expect(r.code).toBe(0);
    expect(r.stderr).toContain(`li: --playbook ${file}: declares no artifacts (no artifacts.expected list); it adds nothing to the contract\n`);
    expect(r.stderr).not.toContain("SECRETHASH");
  });

  test("a project settings file that is a FIFO or over 1 MiB warns naming it, and the leg runs as if it were absent", async () => {
    const home = agentHome();
    const repo = path.join(home.scratch, "repo");
    fs.mkdirSync(path.join(repo, ".li"), { recursive: true });
    const file = path.join(repo, ".li", "settings.yaml");
    expect(Bun.spawnSync(["mkfifo", file]).exitCode).toBe(0);
    let r = await agent(["--cwd", repo, "--no-evidence-gate", "--", fixture("exit-with"), "0"], { home });
    expect(r.code).toBe(0);
    expect(r.stderr).toContain(`settings ${file}: is a FIFO, not a regular file; the file is ignored`);
    fs.rmSync(file);
    fs.writeFileSync(file, `agent:\n  timeout: 1ms\n#${"x".repeat(2 * 1024 * 1024)}\n`);
    r = await agent(["--cwd", repo, "--no-evidence-gate", "--", "sleep", "0.2"], { home });
    expect(r.code).toBe(0);
    expect(r.stderr).toContain(`settings ${file}: is larger than 1 MiB`);
  });
});

describe("signals only on identity (§12.1, §18)", () => {
  /** A ledger holding one running session whose leg recorded pid 99999999999 on this host; returns its LI_HOME. */
  async function ledgerWithHugePid(): Promise<string> {
    const { ledger, liHome } = tempLedger();
    const t = Date.now() / 1000;
    await insertSession(ledger, { id: "huge-pid", startedAt: t - 60, updatedAt: t - 60, legs: [{ id: "l", pid: 99_999_999_999, pidStartTicks: 5, hostId: HERE, startedAt: t - 60 }] });
    ledger.close();
    return liHome;
  }

  // Today: li kill printed `The "pid" argument must be of type number. Received type number (99999999999)`, exit 2.
  test("li kill on a leg whose recorded pid is beyond any process id: one clear note, nothing signalled, written cancelled", async () => {
    const home = await ledgerWithHugePid();
    const r = await li(["kill", "--grace", "0.2", "huge-pid"], { home });
    expect(r.stderr).toBe("li: note: the recorded supervisor pid 99999999999 is not a valid process id; it was not signalled\n");
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("huge-pid: cancelled (run.cancelled.manual_kill)\n");
  });

  test("li watch --once judges such a leg without an error", async () => {
    const home = await ledgerWithHugePid();
    const r = await li(["watch", "--once"], { home });
    expect(r.stdout).not.toContain(" error during=");
    expect(r.stdout).toContain("errors=0");
    expect(r.code).toBe(0);
  });
});

describe("modes under a careless umask (§3, §18)", () => {
  // Today, with umask 000: stream/li.log was 0666 and artifacts/ 0777.
  test("with umask 000 every file li creates is 0600 and every directory 0700", async () => {
    const home = agentHome();
    const run = (args: string[]) =>
      Bun.spawn(["sh", "-c", 'umask 000; exec "$@"', "sh", LI_BINARY, ...args], { env: liEnv(home.home), stdout: "pipe", stderr: "pipe" });
    const foreground = run(["agent", "--artifact", "r=r.txt?", "--notify", "true", "--", fixture("exit-with"), "0"]);
    expect(await foreground.exited).toBe(0);
    const detached = run(["agent", "--detach", "--notify", "true", "--", fixture("exit-with"), "0"]);
    const id = (await new Response(detached.stdout).text()).trim();
    expect(await detached.exited).toBe(0);
    expect((await li(["wait", id], { home: home.home })).code).toBe(0);
    const logs = await until("the detached supervisor's log", () => {
      const found = walk(home.home).filter((p) => p.endsWith("li.log"));
      return found.length > 0 ? found : null;
    });
    expect(logs).toHaveLength(1);
    // The detached supervisor may still be closing: its -wal/-shm files can vanish between the walk and the lstat.
    const loose = walk(home.home)
      .flatMap((p) => {
        const stat = fs.lstatSync(p, { throwIfNoEntry: false });
        return stat ? [{ p, mode: stat.mode & 0o777, dir: stat.isDirectory() }] : [];
      })
      .filter((e) => e.mode !== (e.dir ? 0o700 : 0o600))
      .map((e) => `${e.mode.toString(8)} ${path.relative(home.home, e.p)}`);
    expect(loose).toEqual([]);
    expect(walk(home.home).some((p) => p.endsWith("artifacts"))).toBe(true);
  });
});

function walk(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? [p, ...walk(p)] : [p];
  });
}

describe("li trust: a repository's settings cannot run a program until trusted (§18)", () => {
  // Today: cloning a repository with `notify.on_terminal: "./evil.sh {status}"` and running li agent --cwd ran it.
  test("untrusted → the handler does not run and one warning says how to trust it; trusted → it runs; changed → it does not", async () => {
    const home = agentHome();
    const repo = path.join(home.scratch, "repo");
    const file = path.join(repo, ".li", "settings.yaml");
    const marker = path.join(home.scratch, "ran");
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, `notify:\n  on_terminal: "touch ${marker}"\n`);
    const leg = () => agent(["--cwd", repo, "--no-evidence-gate", "--", fixture("exit-with"), "0"], { home });

    let r = await leg();
    expect(r.code).toBe(0);
    expect(r.stderr).toContain(`not used: this file is not trusted, and the handler would run a program; review the file, then run: li trust ${file}`);
    expect(fs.existsSync(marker)).toBe(false);
    expect(await rows(home.db, "SELECT * FROM terminal_callbacks")).toEqual([]);

    const trusted = await li(["trust", repo], { home: home.home });
    expect(trusted.code).toBe(0);
    expect(trusted.stdout).toStartWith(`trusted ${file} (sha256 `);
    // Whose file it is and the handler it sets, said as it is trusted.
    expect(trusted.stdout).toContain(`(uid ${process.getuid?.()}), mode 0644; sets notify.on_terminal ${JSON.stringify(`touch ${marker}`)}`);
    expect(fs.statSync(path.join(home.home, "trusted")).mode & 0o777).toBe(0o600);
    r = await leg();
    expect(r.stderr).not.toContain("not trusted");
    expect(fs.existsSync(marker)).toBe(true);

    fs.rmSync(marker);
    fs.appendFileSync(file, "# changed\n");
    r = await leg();
    expect(r.stderr).toContain("this file changed since it was trusted");
    expect(fs.existsSync(marker)).toBe(false);
    const listed = await li(["trust", "--list", "--json"], { home: home.home });
    expect(JSON.parse(listed.stdout)).toEqual([{ path: file, sha256: expect.any(String), trusted_at: expect.any(Number), state: "changed" }]);

    const revoked = await li(["trust", "--revoke", file], { home: home.home });
    expect([revoked.code, revoked.stdout]).toEqual([0, `revoked ${file}\n`]);
    const again = await li(["trust", "--revoke", file], { home: home.home });
    expect([again.code, again.stderr]).toEqual([1, `li: ${file} is not trusted\n`]);
  });

  // Today's bug: a repository's (or a planted) agent.timeout ended the user's legs early without a word.
  test("agent.timeout from a project file, shorter than the user's own (none), applies only once the file is trusted", async () => {
    const home = agentHome();
    const repo = path.join(home.scratch, "repo");
    const file = path.join(repo, ".li", "settings.yaml");
    fs.mkdirSync(path.join(repo, ".li"), { recursive: true });
    fs.writeFileSync(file, "agent:\n  timeout: 300ms\n");
    const leg = () => agent(["--cwd", repo, "--no-evidence-gate", "--", "sleep", "1"], { home });
    const untrusted = await leg();
    expect(untrusted.stderr).toContain(`agent.timeout: not used: this file is not trusted, and it would end legs sooner than your own agent.timeout; review the file, then run: li trust ${file}`);
    expect(untrusted.code).toBe(0);
    const trusted = await li(["trust", repo], { home: home.home });
    expect(trusted.stdout).toContain(`; sets agent.timeout "300ms"`);
    expect((await leg()).code).toBe(124);
  }, 30_000);

  // A repository unpacked under a directory whose name holds OSC 52 and a newline: li trust echoes paths.
  test("li trust, --list and --revoke print a hostile directory name escaped, each on one line", async () => {
    const home = agentHome();
    const repo = path.join(home.scratch, "repo\u001b]52;c;aGk=\u0007\nforged");
    const file = path.join(repo, ".li", "settings.yaml");
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, "agent:\n  timeout: 1h\n");
    const escaped = path.join(home.scratch, "repo\\x1b]52;c;aGk=\\x07\\x0aforged", ".li", "settings.yaml");
    const outputs = [
      await li(["trust", repo], { home: home.home }),
      await li(["trust", "--list"], { home: home.home }),
      await li(["trust", "--revoke", file], { home: home.home }),
      await li(["trust", "--revoke", file], { home: home.home }),
    ];
    expect(outputs.map((r) => r.code)).toEqual([0, 0, 0, 1]);
    expect(outputs[0]!.stdout).toStartWith(`trusted ${escaped} (sha256 `);
    expect(outputs[1]!.stdout).toContain(`  ${escaped}\n`);
    expect(outputs[2]!.stdout).toBe(`revoked ${escaped}\n`);
    expect(outputs[3]!.stderr).toBe(`li: ${escaped} is not trusted\n`);
    for (const r of outputs) {
      expect(r.stdout + r.stderr).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f]/);
      expect((r.stdout + r.stderr).trimEnd().split("\n")).toHaveLength(r === outputs[1] ? 2 : 1);
    }
    // --json keeps the real path exactly.
    fs.writeFileSync(file, "agent:\n  timeout: 2h\n");
    await li(["trust", repo], { home: home.home });
    expect(JSON.parse((await li(["trust", "--list", "--json"], { home: home.home })).stdout)[0].path).toBe(file);
  });

  // Today: `./notify.sh` was resolved against li's working directory when the handler ran, so
  // `cd /tmp && li agent --cwd PROJECT` ran a /tmp/notify.sh someone had planted.
  test("a trusted project handler's relative program is the project's, stored absolute, whatever li's working directory", async () => {
    const home = agentHome();
    const repo = path.join(home.scratch, "repo");
    const elsewhere = path.join(home.scratch, "elsewhere");
    const marker = path.join(home.scratch, "which");
    fs.mkdirSync(path.join(repo, ".li"), { recursive: true });
    fs.mkdirSync(elsewhere);
    for (const [dir, name] of [[repo, "project"], [elsewhere, "planted"]] as const) {
      fs.writeFileSync(path.join(dir, "notify.sh"), `#!/bin/sh\necho ${name} >> ${marker}\n`, { mode: 0o755 });
    }
    fs.writeFileSync(path.join(repo, ".li", "settings.yaml"), 'notify.on_terminal: "./notify.sh {status}"\n');
    expect((await li(["trust", repo], { home: home.home })).code).toBe(0);
    const r = await agent(["--cwd", repo, "--no-evidence-gate", "--", "true"], { home, cwd: elsewhere });
    expect(r.code).toBe(0);
    expect(fs.readFileSync(marker, "utf8")).toBe("project\n");
    const [registration] = await rows<{ argv: string }>(home.db, "SELECT argv FROM terminal_callbacks");
    expect(JSON.parse(registration!.argv)).toEqual([path.join(repo, "notify.sh"), "{status}"]);
  });

  test("bad li trust input is one line and exit 2", async () => {
    const home = agentHome();
    for (const [args, message] of [
      [["trust", path.join(home.scratch, "nope")], `li: li trust: ${path.join(home.scratch, "nope")} does not exist\n`],
      [["trust", "--list", "x"], "li: li trust: give a PATH, --list or --revoke PATH, one at a time\n"],
      [["trust", "--json"], "li: li trust: --json goes with --list\n"],
    ] as const) {
      const r = await li([...args], { home: home.home, cwd: home.scratch });
      expect([r.code, r.stderr]).toEqual([2, message]);
    }
    expect(fs.existsSync(path.join(home.home, "trusted"))).toBe(false);
  });
});

describe("careless input (§16, §18)", () => {
  // Today: the newline was taken as a space, so the handler ran `touch` as an argument of the first word.
  test("a newline in a --notify template is refused like any template needing a shell: a warning, no handler, the run goes on", async () => {
    const home = agentHome();
    const r = await agent(["--notify", "true a\ntouch /tmp/never", "--", fixture("exit-with"), "0"], { home });
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("warning: --notify: unquoted newline (a command separator) at character 7 needs a shell");
    expect(await rows(home.db, "SELECT * FROM terminal_callbacks")).toEqual([]);
  });

  // Today: a 10,000-character run id printed a 10 KB ENAMETOOLONG line and had already created state.db.
  test("a 10,000-character --run-id is a short usage error and nothing is created", async () => {
    const home = agentHome();
    const r = await agent(["--run-id", "a".repeat(10_000), "--", fixture("exit-with"), "0"], { home });
    expect(r.code).toBe(2);
    expect(r.stderr).toBe("li: --run-id: an id of 10000 characters is too long (at most 128)\n");
    expect(fs.existsSync(home.home)).toBe(false);
    const env = await agent(["--", fixture("exit-with"), "0"], { home, env: { LI_RUN_ID: "b".repeat(300) } });
    expect([env.code, env.stderr]).toEqual([2, "li: LI_RUN_ID: an id of 300 characters is too long (at most 128)\n"]);
    expect(fs.existsSync(home.home)).toBe(false);
  });

  // Seen in review: a run root below a regular file also printed `cannot remove …/setup-pending.json: EFAULT` (Bun's rmSync).
  test("a run root that cannot be a directory: one warning naming the run directory, the command runs and is recorded", async () => {
    const home = agentHome();
    const file = path.join(home.scratch, "not-a-dir");
    fs.mkdirSync(home.scratch, { recursive: true });
    fs.writeFileSync(file, "x");
    const r = await li(["agent", "--", "sh", "-c", "echo RAN"], { home: home.home, env: { LI_RUNS_ROOT: path.join(file, "runs") } });
    expect([r.code, r.stdout]).toEqual([0, "RAN\n"]);
    const warnings = r.stderr.split("\n").filter((line) => line.startsWith("li: warning:"));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/^li: warning: cannot write the run directory \S+ \(ENOTDIR/);
    expect(await rows(home.db, "SELECT status FROM sessions")).toEqual([{ status: "completed" }]);
  });

  test("a 128-character run id is accepted", async () => {
    const r = await agent(["--run-id", `r${"x".repeat(127)}`, "--", fixture("exit-with"), "0"]);
    expect(r.code).toBe(0);
    expect(r.record.run_id).toHaveLength(128);
  });
});

describe("li's own protocol and files it did not create (§18)", () => {
  // Today: LI_SUPERVISOR_READY=/tmp/x li agent … overwrote /tmp/x with the ready report.
  test("LI_SUPERVISOR_READY naming a path, or fd:3 open on a file, is refused: exit 2, nothing written, nothing created", async () => {
    const home = agentHome();
    const target = path.join(home.scratch, "x");
    fs.writeFileSync(target, "precious\n");
    const r = await li(["agent", "--", fixture("exit-with"), "0"], { home: home.home, env: { LI_SUPERVISOR_READY: target } });
    expect(r.code).toBe(2);
    expect(r.stderr).toStartWith(`li: LI_SUPERVISOR_READY: ${JSON.stringify(target)} is not fd:3;`);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    const viaFd = Bun.spawn(["sh", "-c", 'exec "$@" 3>>"$TARGET"', "sh", LI_BINARY, "agent", "--", fixture("exit-with"), "0"], {
      env: liEnv(home.home, { LI_SUPERVISOR_READY: "fd:3", TARGET: target }),
      stdout: "pipe",
      stderr: "pipe",
    });
    expect(await viaFd.exited).toBe(2);
    expect(await new Response(viaFd.stderr).text()).toContain("fd 3 is not a socket");
    expect(fs.readFileSync(target, "utf8")).toBe("precious\n");
    expect(fs.existsSync(home.home)).toBe(false);
  });

  // Today: a read-only command migrated a zero-length state.db in place.
  test.each([
    [["ls"]],
    [["show", "abc"]],
    [["wait", "abc"]],
    [["state", "transitions", "abc"]],
    [["events", "handlers", "ls"]],
    [["events", "owed", "--consumer=ci"]],
    [["kill", "abc"]],
  ])("li %p on a zero-length state.db: exit 78 naming it, and the file stays empty", async (args) => {
    const home = agentHome();
    const file = path.join(home.home, "state.db");
    fs.mkdirSync(home.home, { recursive: true });
    fs.writeFileSync(file, "");
    const r = await li(args, { home: home.home, env: { LI_DB: undefined } });
    expect(r.code).toBe(78);
    expect(r.stderr).toContain(file);
    expect(r.stderr).toContain("empty file, not a li ledger yet");
    expect(fs.statSync(file).size).toBe(0);
    expect(fs.readdirSync(home.home)).toEqual(["state.db"]);
  });
});
