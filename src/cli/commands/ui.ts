// `li ui`: the ledger's runs in a browser, served read-only by this binary (docs/ui.md).
import { command } from "../command.ts";
import { UsageError } from "../../util/errors.ts";
import { writeNote, writeOut } from "../io.ts";
import { DEFAULT_LISTEN, parseListen, requiredToken } from "../ui/listen.ts";
import { startUi } from "../ui/server.ts";
import { cliPaths } from "../paths.ts";

export default command({
  description:
    "Serve a read-only web page of the ledger's runs: the run list with filters, each session's legs, history, artifacts, notices and output (followed live), updated as the ledger changes. It listens on loopback unless --listen names another address, which needs --token (or LI_UI_TOKEN): every request must then carry it (Authorization: Bearer TOKEN, or open the page once as /?token=TOKEN). Runs until Ctrl-C",
  examples: ["li ui", "LI_UI_TOKEN=$(openssl rand -hex 16) li ui --listen 0.0.0.0:7377"],
  ledger: "reads",
  longLived: true,
  args: {
    listen: { type: "string", valueHint: "HOST:PORT", description: `where to listen (default ${DEFAULT_LISTEN}; port 0 picks a free one)` },
    token: { type: "string", valueHint: "TOKEN", description: "required on every request (16 characters at least); needed for a non-loopback --listen; default $LI_UI_TOKEN" },
    open: { type: "boolean", description: "open the page in the desktop's browser (xdg-open)" },
  },
  async run({ args, ledger: open }) {
    if (args._.length > 0) throw new UsageError(`li ui takes no arguments; unexpected '${String(args._[0])}'`);
    const address = parseListen(args.listen ?? DEFAULT_LISTEN);
    const token = requiredToken(address, args.token, process.env);
    const opened = open();
    let ui;
    try {
      ui = startUi({ opened, hostname: address.hostname, port: address.port, token, home: cliPaths().home });
    } catch (error) {
      const code = (error as { code?: string }).code;
      throw new UsageError(`--listen ${args.listen ?? DEFAULT_LISTEN}: cannot listen there (${code ?? (error as Error).message})`);
    }
    writeOut(`li ui: ${ui.url}${token !== null ? " (with its token: Authorization: Bearer, or ?token= once)" : ""}\n`);
    if (args.open) {
      try {
        Bun.spawn(["xdg-open", ui.url], { stdin: "ignore", stdout: "ignore", stderr: "ignore" }).unref();
      } catch {
        writeNote(`--open: no xdg-open here; open ${ui.url} yourself`);
      }
    }
    await new Promise<void>((resolve) => {
      const stop = () => resolve();
      process.once("SIGINT", stop);
      process.once("SIGTERM", stop);
    });
    await ui.stop();
    return 0;
  },
});
