// `li completion bash|zsh|fish`: scripts generated from the command tree, checked by the shells themselves;
// bash completion driven as bash drives it (COMP_WORDS/COMP_CWORD, the function, COMPREPLY).
import { beforeAll, describe, expect, test } from "bun:test";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ENTITY_KINDS, POLICIES } from "../../src/lifecycle/policy.ts";
import { commandPaths, TREE } from "../../src/cli/tree.ts";
import { isGroup } from "../../src/cli/tree-node.ts";
import { li } from "../helpers/cli.ts";
import { tempDir } from "../helpers/ledger.ts";

const dir = tempDir("li-completion-");
const scripts: Record<"bash" | "zsh" | "fish", string> = { bash: "", zsh: "", fish: "" };

beforeAll(async () => {
  for (const shell of ["bash", "zsh", "fish"] as const) {
    const r = await li(["completion", shell]);
    expect({ shell, code: r.code, stderr: r.stderr }).toEqual({ shell, code: 0, stderr: "" });
    scripts[shell] = join(dir, `li.${shell}`);
    writeFileSync(scripts[shell], r.stdout);
  }
});

/** Which of the shells to check: those this machine has; all of them under .ci/run, which installs them. */
const has = (shell: string) => Bun.which(shell) !== null || process.env.LI_REQUIRE_SHELLS === "1";

// A skipped test says why, once, on one line (bun prints only "(skip)").
for (const shell of ["zsh", "fish", "tmux"]) {
  if (!has(shell)) console.error(`completion.test.ts: skipping the ${shell} tests: ${shell} is not installed here (CI installs it and sets LI_REQUIRE_SHELLS=1)`);
}

function syntaxCheck(shell: string, file: string) {
  const r = Bun.spawnSync([shell, "-n", file], { stderr: "pipe" });
  return { code: r.exitCode, stderr: r.stderr.toString() };
}

/** What bash completion offers for the words typed so far (the last one is the word being completed). */
function bashComplete(words: string[]): string[] {
  const program = 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); _li; printf "%s\\n" "${COMPREPLY[@]}"';
  const r = Bun.spawnSync(["bash", "-c", program, "_", scripts.bash, ...words], { stdout: "pipe", stderr: "pipe", cwd: dir });
  if (r.exitCode !== 0) throw new Error(`bash completion failed: ${r.stderr.toString()}`);
  return r.stdout.toString().split("\n").filter(Boolean).sort();
}

describe("li completion", () => {
  test("the bash script passes bash -n", () => {
    expect(syntaxCheck("bash", scripts.bash)).toEqual({ code: 0, stderr: "" });
  });

  test.skipIf(!has("zsh"))("the zsh script passes zsh -n", () => {
    expect(syntaxCheck("zsh", scripts.zsh)).toEqual({ code: 0, stderr: "" });
  });

  test.skipIf(!has("zsh"))("zsh's _li offers what the words so far allow (zsh's completion builtins stubbed to print their candidates)", () => {
    // Outside a completion widget, words and CURRENT are plain variables; compadd/_describe/_files print what they were given.
    const driver = join(dir, "drive.zsh");
    writeFileSync(
      driver,
      [
        "compdef() { : }",
        "_describe() { local name=$4; print -rl -- ${${(P)name}%%:*} }",
        "compadd() { while [[ $# -gt 0 && $1 != -- ]]; do shift; done; shift; print -rl -- \"$@\" }",
        "_files() { print -r -- \"<files $*>\" }",
        "_message() { print -r -- \"<message $*>\" }",
        "compset() { : }",
        'source "$1"; shift',
        'words=("$@"); CURRENT=$#',
        "_li",
      ].join("\n"),
    );
    const offered = (...typed: string[]) => {
      const r = Bun.spawnSync(["zsh", "-f", driver, scripts.zsh, ...typed], { stdout: "pipe", stderr: "pipe" });
      expect(r.stderr.toString()).toBe("");
      return r.stdout.toString().split("\n").filter(Boolean);
    };
    expect(offered("li", "sta")).toContain("state");
    expect(offered("li", "state", "pr")).toEqual(["create", "set-status", "transitions", "doctor", "prune", "migrate"]);
    expect(offered("li", "state", "prune", "--ke")).toContain("--keep-days");
    expect(offered("li", "ls", "--kind", "")).toEqual([...ENTITY_KINDS]);
    expect(offered("li", "ls", "--kind=sch")).toEqual([...ENTITY_KINDS]);
    expect(offered("li", "agent", "--cwd", "/t")).toEqual(["<files -/>"]);
  });

  test.skipIf(!has("fish"))("the fish script passes fish -n, and fish completes a subcommand and a flag from it", () => {
    expect(syntaxCheck("fish", scripts.fish)).toEqual({ code: 0, stderr: "" });
    const r = Bun.spawnSync(["fish", "-c", `source ${scripts.fish}; complete -C "li state pr"; complete -C "li state prune --ke"`], { stdout: "pipe", stderr: "pipe" });
    expect(r.stderr.toString()).toBe("");
    expect(r.stdout.toString().split("\n").map((l) => l.split("\t")[0])).toEqual(expect.arrayContaining(["prune", "--keep-days"]));
  });

  test("bash completes a command, a subcommand, a flag, and the registry's kinds and statuses", () => {
    expect(bashComplete(["li", "sta"])).toEqual(["state"]);
    expect(bashComplete(["li", "events", "handlers", ""])).toEqual(["add", "ls", "rm"]);
    expect(bashComplete(["li", "state", "prune", "--ke"])).toEqual(["--keep-days"]);
    const kinds = [...ENTITY_KINDS].sort();
    expect(bashComplete(["li", "ls", "--kind", ""])).toEqual(kinds);
    expect(bashComplete(["li", "ls", "--kind", "=", "sch"])).toEqual(["schedule_run"]); // --kind=sch, as bash splits it
    expect(bashComplete(["li", "state", "create", ""])).toEqual(kinds);
    expect(bashComplete(["li", "ls", "--status", "completed"])).toEqual(["completed", "completed_empty"]);
    expect(POLICIES.session.statuses.has("completed_empty")).toBe(true);
  });

  test("every flag of every command is offered by bash (generated from the tree, nothing hand-written)", async () => {
    const missing: string[] = [];
    for (const path of commandPaths()) {
      let node = TREE as Parameters<typeof isGroup>[0];
      for (const word of path) node = (node as typeof TREE).commands[word]!;
      if (isGroup(node)) continue;
      const cmd = await node.load();
      const offered = new Set(bashComplete(["li", ...path, "--"]));
      for (const [name, def] of Object.entries(cmd.args)) {
        if (def.type === "positional") continue;
        const spelled = def.type === "boolean" && def.default === true ? `--no-${name}` : `--${name}`;
        if (!offered.has(spelled)) missing.push(`li ${path.join(" ")} ${spelled}`);
      }
    }
    expect(missing).toEqual([]);
  }, 30_000);
});

describe("li completion ids (what the scripts offer where an id goes)", () => {
  test("prints recent ids newest first, --sessions only sessions' ids", async () => {
    const home = join(tempDir("li-ids-"), "home");
    const first = await li(["agent", "--detach", "--", "true"], { home });
    const play = await li(["state", "create", "play"], { home });
    const all = await li(["completion", "ids"], { home });
    expect(all.code).toBe(0);
    expect(all.stdout.trim().split("\n").sort()).toEqual([first.stdout.trim(), play.stdout.trim()].sort());
    expect((await li(["completion", "ids", "--sessions"], { home })).stdout).toBe(`${first.stdout.trim()}\n`);
  });

  test("prints nothing and exits 0 when there is no ledger, and creates none", async () => {
    const home = join(tempDir("li-ids-"), "home");
    const r = await li(["completion", "ids"], { home });
    expect([r.code, r.stdout, r.stderr]).toEqual([0, "", ""]);
    expect(existsSync(home)).toBe(false);
  });

  test("prints nothing and exits 0 within its bound when the ledger does not answer", async () => {
    // A server that accepts and never says a word: connecting would wait for its 10 s connect_timeout.
    const silent = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    try {
      const started = performance.now();
      const r = await li(["completion", "ids"], { home: join(tempDir("li-ids-"), "home"), env: { LI_DB: `postgres://li@127.0.0.1:${silent.port}/li` } });
      expect([r.code, r.stdout, r.stderr]).toEqual([0, "", ""]);
      // "At most a few hundred ms" (the bound is 300 ms); 3 s leaves a loaded machine room and is far below connect_timeout.
      expect(performance.now() - started).toBeLessThan(3_000);
    } finally {
      silent.stop(true);
    }
  });
});
