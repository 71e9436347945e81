// Progress lines (issue 12 item 5): `li state prune`, a foreground `li watch`'s prune and `li wait` on
// several ids keep one status line on stderr when stderr is a terminal (run under a pseudo-terminal
// with `script`); stdout never gets it, and into a pipe nothing is printed.

import { afterEach, describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { li, LI_BINARY, liEnv } from "../helpers/cli.ts";
import { tempDir, tempLedger, type TempLedger } from "../helpers/ledger.ts";
import { insertSession } from "../helpers/sweep-fixtures.ts";
import { finishSession, seedSession } from "../wait/seed.ts";

const open: TempLedger[] = [];
afterEach(() => {
  for (const t of open.splice(0)) t.ledger.close();
});

/** Runs `li ARGS > out` under a pseudo-terminal: what the terminal saw (stderr) and what stdout got. */
function underPty(home: string, args: string[]): { terminal: string; stdout: string } {
  const out = path.join(tempDir("li-pty-"), "stdout");
  const quoted = args.map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(" ");
  const r = Bun.spawnSync(["script", "-qfec", `stty cols 120 rows 40; ${LI_BINARY} ${quoted} > ${out}`, "/dev/null"], { env: liEnv(home), stdout: "pipe", stderr: "pipe" });
  return { terminal: r.stdout.toString(), stdout: fs.readFileSync(out, "utf8") };
}

/** 150 terminal sessions last updated 40 days ago: two prune batches of 100. */
async function oldSessions(): Promise<TempLedger> {
  const t = tempLedger();
  open.push(t);
  const old = Date.now() / 1000 - 40 * 86400;
  for (let i = 0; i < 150; i++) {
    await insertSession(t.ledger, { id: `old-${String(i).padStart(3, "0")}`, status: "completed", startedAt: old, updatedAt: old });
  }
  return t;
}

describe("progress on stderr", () => {
  test("li state prune on a terminal shows batches done / estimated and the rate; stdout holds only its summary", async () => {
    const t = await oldSessions();
    const { terminal, stdout } = underPty(t.paths.home, ["state", "prune", "--keep-days", "30"]);
    expect(terminal).toMatch(/prune: batch \d\/2 · \d+ sessions · \d+ sessions\/s/);
    // The line is erased at the end, so what follows starts on a clean line.
    expect(terminal.endsWith("\r\u001b[K")).toBe(true);
    expect(stdout).toBe("pruned sessions=150 transitions=300 legs=0 skipped_owed=0\n");
  });

  test("li state prune into a pipe prints no progress", async () => {
    const t = await oldSessions();
    const r = await li(["state", "prune", "--keep-days", "30", "--dry-run"], { home: t.paths.home });
    expect(r.code).toBe(0);
    expect(r.stderr).not.toContain("prune: batch");
    expect(r.stderr).not.toContain("\u001b");
    expect(r.stdout).toBe("pruned sessions=150 transitions=300 legs=0 skipped_owed=0\n");
  });

  test("a foreground li watch on a terminal shows its prune pass's progress on stderr, its log on stdout", async () => {
    const t = await oldSessions();
    const { terminal, stdout } = underPty(t.paths.home, ["watch", "--once", "--prune-keep-days", "30"]);
    expect(terminal).toMatch(/prune: batch \d\/2/);
    expect(stdout).not.toContain("\u001b");
    expect(stdout).toMatch(/ prune keep_days=30 sessions=150 /);
  });

  test("li wait on several ids keeps one status line on a terminal; stdout has only the frozen lines; a pipe gets nothing", async () => {
    const t = tempLedger();
    open.push(t);
    const ok = await seedSession(t.ledger);
    await finishSession(t.ledger, ok.id, "completed", "run.completed.ok", 0);
    const bad = await seedSession(t.ledger);
    await finishSession(t.ledger, bad.id, "failed", "run.failed.exit_nonzero", 1);
    const { terminal, stdout } = underPty(t.paths.home, ["wait", ok.id, bad.id]);
    expect(terminal).toContain("0/2 finished, 0 failed");
    expect(terminal).toContain("2/2 finished, 1 failed");
    expect(stdout.trimEnd().split("\n").map((l) => l.split("\t")[0])).toEqual([ok.id, bad.id]);
    expect(stdout).not.toContain("\u001b");
    const piped = await li(["wait", ok.id, bad.id], { home: t.paths.home });
    expect(piped.code).toBe(1);
    expect(piped.stderr).toBe("");
    // One id: no status line even on a terminal.
    expect(underPty(t.paths.home, ["wait", ok.id]).terminal).not.toContain("finished");
  });
});
