// An interactive shell in a real terminal (a tmux pane of a private tmux server), driven by keys and read
// from the screen: for what only a real shell does, such as its completion system answering TAB.

import { join } from "node:path";
import { tempDir } from "./temp-dirs.ts";
import { until } from "./until.ts";

export class TmuxShell {
  private constructor(private readonly socket: string) {}

  /** Starts `argv` in a 200×50 pane; `ready` is text its prompt shows once it is up. */
  static async start(argv: string[], env: Record<string, string>, ready: string, cwd: string): Promise<TmuxShell> {
    const shell = new TmuxShell(join(tempDir("li-tmux-"), "socket"));
    shell.tmux(["-f", "/dev/null", "new-session", "-d", "-x", "200", "-y", "50", "--", ...argv], env, cwd);
    await until(`the shell's prompt (${ready})`, () => shell.screen().includes(ready));
    return shell;
  }

  private tmux(args: string[], env?: Record<string, string>, cwd?: string): string {
    const r = Bun.spawnSync(["tmux", "-S", this.socket, ...args], { env: env ?? (process.env as Record<string, string>), stdout: "pipe", stderr: "pipe", ...(cwd ? { cwd } : {}) });
    if (r.exitCode !== 0) throw new Error(`tmux ${args[0]}: ${r.stderr.toString().trim()}`);
    return r.stdout.toString();
  }

  /** Types `text` literally. */
  type(text: string): void {
    this.tmux(["send-keys", "-t", "0", "-l", "--", text]);
  }

  /** Presses keys by tmux's names (Tab, C-u, Enter). */
  press(...keys: string[]): void {
    this.tmux(["send-keys", "-t", "0", ...keys]);
  }

  /** What the pane shows, its lines joined where the terminal wrapped them. */
  screen(): string {
    return this.tmux(["capture-pane", "-p", "-J", "-t", "0"]);
  }

  /** The last line of the screen that starts with `prompt`: the command line being edited. */
  line(prompt: string): string {
    const lines = this.screen().split("\n").filter((l) => l.startsWith(prompt));
    return (lines.at(-1) ?? "").slice(prompt.length).trimEnd();
  }

  /** Types `text`, presses TAB, and waits until the edited line is what `expected` says. */
  async complete(prompt: string, text: string, expected: string | RegExp): Promise<string> {
    this.press("C-u");
    await until("an empty command line", () => this.line(prompt) === "");
    this.type(text);
    await until(`the typed line ${JSON.stringify(text)}`, () => this.line(prompt) === text.trimEnd());
    this.press("Tab");
    return until(`TAB after ${JSON.stringify(text)} to give ${expected}`, () => {
      const line = this.line(prompt);
      if (typeof expected === "string" ? line === expected : expected.test(line)) return line;
      throw new Error(`the line is ${JSON.stringify(line)}; the screen:\n${this.screen().trimEnd()}`);
      // The shell runs li for the ids (on PostgreSQL a connect and a query): on a loaded machine that
      // has taken over 10 s, so the wait is generous; a completion that never comes still fails.
    }, { timeoutMs: 30_000 });
  }

  stop(): void {
    try {
      this.tmux(["kill-server"]);
    } catch {
      // already gone
    }
  }
}
