// `li logs` end to end (§13): a finished leg, a resumed session's legs in order, following a live leg,
// a pruned run directory and another host's leg, escaping versus --raw, --tail, --json, bad input.

import { afterAll, describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import type { Subprocess } from "bun";
import { li, LI_BINARY, liEnv } from "../helpers/cli.ts";
import { tempDir } from "../helpers/ledger.ts";
import { NeverHappens, until } from "../helpers/until.ts";
import { ledgerRows } from "../helpers/ledger-rows.ts";

const spawned: Subprocess[] = [];
afterAll(() => {
  for (const p of spawned) if (p.exitCode === null) p.kill("SIGKILL");
});

function newHome(): string {
  return path.join(tempDir("li-logs-"), "home");
}

async function leg(home: string, args: string[]): Promise<{ session_id: string; branch_id: string; run_id: string; code: number }> {
  const r = await li(["agent", "--json", ...args], { home });
  return { ...(JSON.parse(r.stdout) as { session_id: string; branch_id: string; run_id: string }), code: r.code };
}

async function sql(home: string, statement: string, ...params: string[]): Promise<void> {
  await ledgerRows(home).run(statement, ...params);
}

describe("li logs", () => {
  test("a finished session: what its leg printed, stdout and stderr as captured; found by session, branch or run id", async () => {
    const home = newHome();
    const s = await leg(home, ["--", "sh", "-c", "echo to-stdout; echo to-stderr >&2; echo last"]);
    expect(s.code).toBe(0);
    // Two pipes feed one file: their lines interleave in arrival order, so only the set is certain.
    const lines = (text: string) => text.trimEnd().split("\n").sort();
    for (const id of [s.session_id, s.session_id.slice(0, 8), s.branch_id, s.run_id]) {
      const r = await li(["logs", id], { home });
      expect(r.code).toBe(0);
      expect(lines(r.stdout)).toEqual(["last", "to-stderr", "to-stdout"]);
    }
    const json = (await li(["logs", "--json", s.session_id], { home })).stdout.trimEnd().split("\n").map((l) => JSON.parse(l));
    expect(json).toEqual([expect.objectContaining({ seq: 1, run_id: s.run_id, status: "completed", exit_code: 0, error: null })]);
    expect(lines(json[0].text)).toEqual(["last", "to-stderr", "to-stdout"]);
    const one = await leg(home, ["--", "sh", "-c", "echo a; echo b; echo c"]);
    expect((await li(["logs", "--tail", "2", one.session_id], { home })).stdout).toBe("b\nc\n");
    expect((await li(["logs", "--tail", "0", one.session_id], { home })).stdout).toBe("");
  });

  test("a resumed session: the current leg by default, --leg N by seq, --leg all in leg order with one header per leg", async () => {
    const home = newHome();
    const first = await leg(home, ["--", "sh", "-c", "echo first leg; exit 4"]);
    expect(first.code).toBe(1);
    const second = await leg(home, ["-r", first.branch_id, "--", "sh", "-c", "echo second leg"]);
    expect(second.session_id).toBe(first.session_id);
    expect((await li(["logs", first.session_id], { home })).stdout).toBe("second leg\n");
    expect((await li(["logs", "--leg", "1", first.session_id], { home })).stdout).toBe("first leg\n");
    // A run id names its own leg.
    expect((await li(["logs", first.run_id], { home })).stdout).toBe("first leg\n");
    const all = await li(["logs", "--leg", "all", first.session_id], { home });
    expect(all.code).toBe(0);
    const lines = all.stdout.trimEnd().split("\n");
    expect(lines).toHaveLength(4);
    expect(lines[0]).toMatch(new RegExp(`^==> leg 1 · run ${first.run_id} · started \\S+ · failed, exit 4 <==$`));
    expect(lines[1]).toBe("first leg");
    expect(lines[2]).toMatch(new RegExp(`^==> leg 2 · run ${second.run_id} · started \\S+ · completed, exit 0 <==$`));
    expect(lines[3]).toBe("second leg");
    // A session of one leg gets its header under --leg all too: the shape does not depend on the count.
    const single = await leg(home, ["--", "sh", "-c", "echo only leg"]);
    const lone = (await li(["logs", "--leg", "all", single.session_id], { home })).stdout.trimEnd().split("\n");
    expect(lone).toHaveLength(2);
    expect(lone[0]).toMatch(new RegExp(`^==> leg 1 · run ${single.run_id} · started \\S+ · completed, exit 0 <==$`));
    expect(lone[1]).toBe("only leg");
    expect((await li(["logs", single.session_id], { home })).stdout).toBe("only leg\n");
    const noSuchLeg = await li(["logs", "--leg", "3", first.session_id], { home });
    expect(noSuchLeg.code).toBe(2);
    expect(noSuchLeg.stderr).toContain("no leg 3");
  });

  test("-f prints a live leg's lines as they are written and returns when the leg ends, with li wait's exit code", async () => {
    const home = newHome();
    const go = path.join(tempDir("li-logs-go-"), "go");
    // The command waits for the test's signal file between its two lines.
    const detach = await li(["agent", "--detach", "--", "sh", "-c", 'echo first; while [ ! -e "$1" ]; do sleep 0.05; done; echo second; exit 3', "sh", go], { home });
    expect(detach.code).toBe(0);
    const id = detach.stdout.trim();
    const follower = Bun.spawn([LI_BINARY, "logs", "-f", id], { env: liEnv(home), stdout: "pipe", stderr: "pipe" });
    spawned.push(follower);
    let seen = "";
    // Resolves once li logs -f's stdout has ended: its exit can be seen before its last line is read.
    const read = (async () => {
      const decoder = new TextDecoder();
      for await (const chunk of follower.stdout) seen += decoder.decode(chunk, { stream: true });
    })();
    const notExited = () => {
      if (follower.exitCode !== null) throw new NeverHappens(`li logs -f exited ${follower.exitCode} early; printed ${JSON.stringify(seen)}`);
    };
    await until("li logs -f prints the first line while the leg still runs", () => (notExited(), seen === "first\n"));
    fs.writeFileSync(go, "");
    const code = await follower.exited;
    await read;
    expect(seen).toBe("first\nsecond\n");
    expect(code).toBe(1); // exit 3 is failed: li wait's 1
    const wait = await li(["wait", id], { home });
    expect(wait.code).toBe(1);
  }, 60_000);

  test("-f stops when its reader goes away (li logs -f ID | head), while the leg runs on", async () => {
    const home = newHome();
    const go = path.join(tempDir("li-logs-go-"), "go");
    const detach = await li(["agent", "--detach", "--", "sh", "-c", 'while [ ! -e "$1" ]; do echo tick; sleep 0.05; done', "sh", go], { home });
    const id = detach.stdout.trim();
    try {
      const pipeline = Bun.spawn(["sh", "-c", `"${LI_BINARY}" logs -f "$1" | head -n 2`, "sh", id], { env: liEnv(home), stdout: "pipe", stderr: "pipe" });
      spawned.push(pipeline);
      const [out, code] = await Promise.all([new Response(pipeline.stdout).text(), pipeline.exited]);
      expect(out).toBe("tick\ntick\n");
      expect(code).toBe(0);
      // The leg was not waited for: it is still running.
      const shown = JSON.parse((await li(["show", "--json", id], { home })).stdout);
      expect(shown.entity.status).toBe("running");
    } finally {
      fs.writeFileSync(go, "");
    }
    expect((await li(["wait", "--timeout", "60", id], { home })).code).toBe(0);
  }, 60_000);

  test("-f on a session that already ended prints its output and exits at once with its code", async () => {
    const home = newHome();
    const s = await leg(home, ["--", "sh", "-c", "echo done"]);
    const r = await li(["logs", "-f", s.session_id], { home });
    expect(r).toMatchObject({ code: 0, stdout: "done\n" });
  });

  test("a pruned run directory, or a leg recorded on another host: one line naming the path and the host, exit 1", async () => {
    const home = newHome();
    const s = await leg(home, ["--", "echo", "hi"]);
    const runDir = path.join(home, "runs", s.run_id);
    fs.rmSync(runDir, { recursive: true });
    const gone = await li(["logs", s.session_id], { home });
    expect(gone.code).toBe(1);
    expect(gone.stdout).toBe("");
    expect(gone.stderr.trimEnd().split("\n")).toHaveLength(1);
    expect(gone.stderr).toContain(runDir);
    expect(gone.stderr).toContain("gone");
    expect(gone.stderr).toContain(`host ${require("node:os").hostname()}`);

    const other = await leg(home, ["--", "echo", "elsewhere"]);
    await sql(home, "UPDATE legs SET host_id = 'another-machine:another-boot', host_name = 'build-7' WHERE run_id = ?", other.run_id);
    const remote = await li(["logs", other.session_id], { home });
    expect(remote.code).toBe(1);
    expect(remote.stderr).toContain("build-7 (another-machine:another-boot)");
    expect(remote.stderr).toContain(path.join(home, "runs", other.run_id));
    const json = JSON.parse((await li(["logs", "--json", other.session_id], { home })).stdout);
    expect(json).toMatchObject({ text: null, host_name: "build-7", error: expect.stringContaining("not on this machine") });
  });

  test("on a terminal its colours are kept and a carriage return rewrites its line; a title or any other control is escaped; NO_COLOR escapes all", async () => {
    const home = newHome();
    const s = await leg(home, ["--", "printf", "\\033[32mgreen\\033[0m\\n\\033]0;title\\007\\nprogress 10%%\\rprogress 100%%\\n"]);
    const onTerminal = (noColor: string | undefined) =>
      Bun.spawnSync(["script", "-qfec", `${LI_BINARY} logs ${s.session_id}`, "/dev/null"], { env: liEnv(home, { NO_COLOR: noColor, TERM: "xterm" }), stdout: "pipe", stderr: "pipe" }).stdout.toString();
    const shown = onTerminal(undefined);
    expect(shown).toBe("\x1b[32mgreen\x1b[0m\r\n\\x1b]0;title\\x07\r\nprogress 10%\r\x1b[Kprogress 100%\r\n\x1b[0m");
    expect(onTerminal("1")).toBe("\\x1b[32mgreen\\x1b[0m\r\n\\x1b]0;title\\x07\r\nprogress 10%\\x0dprogress 100%\r\n");
    // Into a pipe, as before: every control escaped.
    expect((await li(["logs", s.session_id], { home, env: { NO_COLOR: undefined } })).stdout).toBe("\\x1b[32mgreen\\x1b[0m\n\\x1b]0;title\\x07\nprogress 10%\\x0dprogress 100%\n");
  });

  test("the command's control characters are escaped (newline and tab kept); --raw writes the bytes exactly", async () => {
    const home = newHome();
    const s = await leg(home, ["--", "printf", "a\\tb\\n\\033]52;c;aGk=\\007\\033[2Jx\\r\\n"]);
    const escaped = await li(["logs", s.session_id], { home });
    expect(escaped.stdout).toBe("a\tb\n\\x1b]52;c;aGk=\\x07\\x1b[2Jx\\x0d\n");
    const raw = await li(["logs", "--raw", s.session_id], { home });
    expect(raw.stdout).toBe("a\tb\n\u001b]52;c;aGk=\u0007\u001b[2Jx\r\n");
  });

  test("a stream file replaced by a symlink is refused with one line naming it, not followed", async () => {
    const home = newHome();
    const s = await leg(home, ["--", "echo", "hi"]);
    const file = path.join(home, "runs", s.run_id, "stream", `${s.branch_id}.log`);
    fs.rmSync(file);
    fs.symlinkSync("/etc/passwd", file);
    const r = await li(["logs", s.session_id], { home });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain(file);
    expect(r.stderr).toContain("symbolic link");
    const json = await li(["logs", "--json", s.session_id], { home });
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toMatchObject({ text: null, error: expect.stringContaining("symbolic link") });
  });

  test("bad input: an unknown id, a bad --leg or --tail, -f with --json, another kind — exit 2, one line; --help", async () => {
    const home = newHome();
    const s = await leg(home, ["--", "true"]);
    await li(["state", "create", "play", "--id", "play-1"], { home });
    for (const [args, culprit] of [
      [["logs", "nope"], "nope"],
      [["logs", "--leg", "first", s.session_id], "--leg"],
      [["logs", "--tail", "-1", s.session_id], "--tail"],
      [["logs", "-f", "--json", s.session_id], "--json"],
      [["logs", "play-1"], "play"],
    ] as const) {
      const r = await li([...args], { home });
      expect(r.code).toBe(2);
      expect(r.stdout).toBe("");
      expect(r.stderr.trimEnd().split("\n")).toHaveLength(1);
      expect(r.stderr).toContain(culprit);
    }
    // --leg's message names what it takes: a leg number from 1, or all.
    for (const bad of ["first", "0", "-1", "1.5"]) {
      const r = await li(["logs", `--leg=${bad}`, s.session_id], { home });
      expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 2, stderr: `li: --leg: ${JSON.stringify(bad)} is neither a leg number (1, 2 …) nor all\n` });
    }
    const help = await li(["logs", "--help"], { home });
    expect(help.code).toBe(0);
    for (const flag of ["-f, --follow", "--leg=N|all", "--tail=N", "--raw", "--json"]) expect(help.stdout).toContain(flag);
  });
});
