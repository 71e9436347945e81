// `li completion bash|zsh|fish`: print a completion script generated from the command tree (src/cli/completion.ts).
import { command } from "../command.ts";
import { bashScript, completionModel, fishScript, zshScript } from "../completion.ts";
import { writeOut } from "../io.ts";
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
