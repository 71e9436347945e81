// A ledger home per test and the `li watch` processes started on it, cleaned up after the file's tests:
// the setup the queue, warm-supervisor and timed-work CLI tests share. Call it once, at a file's top level
// (it registers that file's afterEach and afterAll).

import { afterAll, afterEach } from "bun:test";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { LI_BINARY, liEnv } from "./cli.ts";
import { collectLines } from "./lines.ts";
import { ledgerRows, type LedgerRows } from "./ledger-rows.ts";
import { tempDir } from "./temp-dirs.ts";

export interface Home {
  dir: string;
  home: string;
  rows: LedgerRows;
}

export interface Watcher {
  proc: Subprocess<"ignore", "pipe", "pipe">;
  lines: string[];
}

export interface WatchHomes {
  /** Processes killed (SIGKILL) after the file's tests if still running; push any other the file starts. */
  spawned: Subprocess[];
  /** A temp directory with `home` inside it (not made yet) and that home's ledger rows, closed after the test. */
  newHome(): Home;
  /** `li watch ARGS…` on `h` (its stdout's lines collected), with `watchArgs` and `env` added. */
  startWatcher(h: Home, env?: Record<string, string>, args?: readonly string[]): Watcher;
}

/** `watchArgs` go to every `li watch` this file starts (e.g. `--log-format json`). */
export function watchHomes(watchArgs: readonly string[] = []): WatchHomes {
  const spawned: Subprocess[] = [];
  afterAll(() => {
    for (const p of spawned) if (p.exitCode === null && p.signalCode === null) p.kill("SIGKILL");
  });
  const opened: LedgerRows[] = [];
  afterEach(async () => {
    for (const rows of opened.splice(0)) await rows.close();
  });
  return {
    spawned,
    newHome() {
      const dir = tempDir();
      const home = join(dir, "home");
      const rows = ledgerRows(home);
      opened.push(rows);
      return { dir, home, rows };
    },
    startWatcher(h, env = {}, args = []) {
      const proc = Bun.spawn([LI_BINARY, "watch", ...watchArgs, ...args], { env: liEnv(h.home, env), cwd: h.dir, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
      spawned.push(proc);
      return { proc, lines: collectLines(proc.stdout).lines };
    },
  };
}
