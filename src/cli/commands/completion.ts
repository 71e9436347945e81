// `li completion bash|zsh|fish`: print a completion script generated from the command tree (src/cli/completion.ts).
import { command } from "../command.ts";
import { bashScript, completionModel, fishScript, zshScript } from "../completion.ts";
import { writeOut } from "../io.ts";
import { safeText } from "../../util/text.ts";
import type { Group } from "../tree-node.ts";

/** The command for one shell, over the tree it is given (the tree names this module: it cannot import the tree). */
function shell(name: string, render: typeof bashScript, examples: readonly string[]) {
  return (tree: Group) =>
    command({
      description: `Print li's ${name} completion script (commands, subcommands, flags, and the registry's kinds and statuses)`,
      examples,
      ledger: "none",
      args: {},
      async run() {
        writeOut(render(await completionModel(tree)));
        return 0;
      },
    });
}

export const bash = shell("bash", bashScript, ["li completion bash > ~/.local/share/bash-completion/completions/li", "source <(li completion bash)"]);
export const zsh = shell("zsh", zshScript, ["li completion zsh > ~/.zfunc/_li"]);
export const fish = shell("fish", fishScript, ["li completion fish > ~/.config/fish/completions/li.fish"]);

/** How long a completion may wait for the ledger: a TAB that hangs is worse than one that offers nothing. */
const IDS_DEADLINE_MS = 300;
const IDS_LIMIT = 100;

/** `li completion ids [--sessions]`: what the scripts offer where an id goes, newest first. */
export const ids = command({
  description: `Print the ids of recent entities (--sessions: sessions only), newest first, one a line, for the completion scripts. Prints nothing, and exits 0, when the ledger is missing, unreachable or slower than ${IDS_DEADLINE_MS} ms`,
  examples: ["li completion ids --sessions"],
  ledger: "none",
  args: {
    sessions: { type: "boolean", description: "session ids only (what li agent -r, li logs and li kill take first)" },
  },
  async run({ args }) {
    // The shell waits for this process: past the deadline it ends, with whatever it printed (nothing).
    setTimeout(() => process.exit(0), IDS_DEADLINE_MS).unref();
    try {
      const [{ openReads }, { cliPaths }, { ENTITY_KINDS }] = await Promise.all([import("../../ledger/open-reads.ts"), import("../paths.ts"), import("../../lifecycle/policy.ts")]);
      const opened = openReads(cliPaths());
      try {
        const rows = await opened.reads.listRecent({ kinds: args.sessions ? ["session"] : ENTITY_KINDS, limit: IDS_LIMIT });
        // Ids are li's own (validated on write), but a completion is still terminal output.
        writeOut(rows.map((r) => safeText(r.id)).join("\n") + (rows.length > 0 ? "\n" : ""));
      } finally {
        opened.close();
      }
    } catch {
      // Missing, refused or unreachable: a completion offers nothing rather than an error mid-line.
    }
    return 0;
  },
});
