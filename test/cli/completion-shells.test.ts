// Completion in the real shells, under a real terminal (tmux): TAB where an id goes offers the ledger's
// recent ids, and after `--` the shell's own completion of the command li will run takes over.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { li, LI_BINARY, liEnv } from "../helpers/cli.ts";
import { tempDir } from "../helpers/temp-dirs.ts";
import { TmuxShell } from "../helpers/tmux.ts";
import { agentHome } from "../legs/agent-harness.ts";

const BASH_COMPLETION = "/usr/share/bash-completion/bash_completion";
const required = process.env.LI_REQUIRE_SHELLS === "1";
const missing = (what: string, present: boolean) => {
  if (!present && !required) console.error(`completion-shells.test.ts: skipping what needs ${what}: it is not installed here (CI installs it and sets LI_REQUIRE_SHELLS=1)`);
  return !present && !required;
};
const noTmux = missing("tmux", Bun.which("tmux") !== null);
const skip = {
  bash: noTmux || missing("bash-completion", existsSync(BASH_COMPLETION)),
  zsh: noTmux || missing("zsh", Bun.which("zsh") !== null),
  fish: noTmux || missing("fish", Bun.which("fish") !== null),
};

const PROMPT = "READY> ";
/** A command on PATH that no directory listing holds: completing it proves command completion, not files. */
const COMMAND = "lifixturecmdxyz";

let sessionId = "";
let env: Record<string, string> = {};
let work = "";
let scripts = "";
const shells: TmuxShell[] = [];

beforeAll(async () => {
  const home = agentHome();
  const r = await li(["agent", "--detach", "--", "true"], { home: home.home });
  expect(r.code).toBe(0);
  sessionId = r.stdout.trim();
  const root = tempDir("li-shells-");
  const bin = join(root, "bin");
  work = join(root, "work");
  scripts = join(root, "scripts");
  for (const dir of [bin, work, scripts, join(root, "home")]) mkdirSync(dir);
  writeFileSync(join(bin, COMMAND), "#!/bin/sh\nexit 0\n");
  chmodSync(join(bin, COMMAND), 0o755);
  // A file in the working directory an id prefix would match were files offered.
  writeFileSync(join(work, `${sessionId.slice(0, 6)}-a-file`), "");
  env = liEnv(home.home, { PATH: `${dirname(LI_BINARY)}:${bin}:${process.env.PATH}`, HOME: join(root, "home"), XDG_CONFIG_HOME: join(root, "home", ".config"), XDG_DATA_HOME: join(root, "home", ".data"), TERM: "xterm" });
  for (const shell of ["bash", "zsh", "fish"]) {
    const out = await li(["completion", shell]);
    writeFileSync(join(scripts, shell === "zsh" ? "_li" : `li.${shell}`), out.stdout);
  }
});
afterAll(() => {
  for (const s of shells) s.stop();
});

async function start(argv: string[]): Promise<TmuxShell> {
  const shell = await TmuxShell.start(argv, env, PROMPT, work);
  shells.push(shell);
  return shell;
}

/** The cases every shell must complete, from a prefix of the id (or of the command) to the whole. */
async function completesIdsAndCommands(shell: TmuxShell): Promise<void> {
  const prefix = sessionId.slice(0, 6);
  for (const command of ["wait", "show", "logs", "kill"]) {
    expect(await shell.complete(PROMPT, `li ${command} ${prefix}`, `li ${command} ${sessionId}`)).toBe(`li ${command} ${sessionId}`);
  }
  expect(await shell.complete(PROMPT, `li agent -r ${prefix}`, `li agent -r ${sessionId}`)).toBe(`li agent -r ${sessionId}`);
  expect(await shell.complete(PROMPT, `li agent -- ${COMMAND.slice(0, 12)}`, `li agent -- ${COMMAND}`)).toBe(`li agent -- ${COMMAND}`);
}

describe("completion in a real terminal", () => {
  test.skipIf(skip.bash)("bash (with bash-completion): ids from the ledger, and the command after -- by bash's command completion", async () => {
    const rc = join(scripts, "bashrc");
    writeFileSync(rc, [`source ${BASH_COMPLETION}`, `source ${join(scripts, "li.bash")}`, `PS1='${PROMPT}'`, "bind 'set bell-style none'"].join("\n") + "\n");
    await completesIdsAndCommands(await start(["bash", "--noprofile", "--rcfile", rc, "-i"]));
  }, 180_000);

  test.skipIf(skip.zsh)("zsh (compinit): ids from the ledger, and the command after -- by zsh's _normal", async () => {
    const zdotdir = join(scripts, "zdotdir");
    mkdirSync(zdotdir);
    writeFileSync(join(zdotdir, ".zshrc"), [`fpath=(${scripts} $fpath)`, "autoload -Uz compinit && compinit -u -D", `PROMPT='${PROMPT}'`, "unsetopt beep"].join("\n") + "\n");
    await completesIdsAndCommands(await start(["env", `ZDOTDIR=${zdotdir}`, "zsh", "-i"]));
  }, 180_000);

  test.skipIf(skip.fish)("fish: ids from the ledger (no file names), and the command after -- by __fish_complete_subcommand", async () => {
    const init = `set -g fish_autosuggestion_enabled 0; function fish_prompt; echo -n '${PROMPT}'; end; source ${join(scripts, "li.fish")}`;
    await completesIdsAndCommands(await start(["fish", "--no-config", "-C", init]));
  }, 180_000);
});
