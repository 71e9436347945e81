// A real headless Chromium for the page's tests, driven by Bun.WebView. Debian's chromium-headless-shell
// (or chromium) is looked for; without one the tests skip with one visible line, except where
// LI_REQUIRE_BROWSER=1 (CI installs it), where a missing browser fails them.
import { existsSync } from "node:fs";

const CANDIDATES = ["/usr/bin/chromium-headless-shell", "/usr/lib/chromium/headless_shell", "/usr/bin/chromium"];

export const BROWSER: string | null = process.env.LI_TEST_BROWSER ?? CANDIDATES.find((p) => existsSync(p)) ?? null;
export const browserRequired = process.env.LI_REQUIRE_BROWSER === "1";

/** True when the browser tests can run; prints why they skip once otherwise; throws when CI requires them. */
export function browserAvailable(file: string): boolean {
  if (BROWSER !== null) return true;
  if (browserRequired) throw new Error(`${file}: LI_REQUIRE_BROWSER=1 but no Chromium is installed (apt-get install chromium-headless-shell)`);
  console.error(`${file}: skipping the browser tests: no Chromium here (apt-get install chromium-headless-shell; CI installs it and sets LI_REQUIRE_BROWSER=1)`);
  return false;
}

/** Chromium without anything that reaches out (the machine may have no network), as root without its sandbox. */
export const CHROMIUM_ARGS = ["--no-sandbox", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-default-apps"];

export interface Page {
  view: Bun.WebView;
  /** Evaluates `js` in the page (an expression) and returns its JSON value. */
  eval<T = unknown>(js: string): Promise<T>;
  close(): void;
}

export function openPage(width = 1200, height = 800): Page {
  const view = new Bun.WebView({ width, height, backend: { type: "chrome", url: false, path: BROWSER!, argv: CHROMIUM_ARGS } } as ConstructorParameters<typeof Bun.WebView>[0]);
  return {
    view,
    eval: async <T>(js: string) => (await view.evaluate(js)) as T,
    close: () => {
      // Closing twice (or after the browser went away) is not an error here.
      try {
        const closed = view.close() as unknown;
        if (closed instanceof Promise) closed.catch(() => {});
      } catch {
        // already closed
      }
    },
  };
}

/** What a page did that a safe page never does: dialogs opened, exceptions thrown, console errors (CSP refusals are logged as such). */
export async function watchForTrouble(page: Page): Promise<string[]> {
  const trouble: string[] = [];
  await page.view.navigate("about:blank");
  await page.view.cdp("Page.enable");
  await page.view.cdp("Runtime.enable");
  await page.view.cdp("Log.enable");
  page.view.addEventListener("Page.javascriptDialogOpening", (e: MessageEvent<{ message: string }>) => {
    trouble.push(`dialog: ${e.data.message}`);
    void page.view.cdp("Page.handleJavaScriptDialog", { accept: true });
  });
  page.view.addEventListener("Runtime.exceptionThrown", (e: MessageEvent<{ exceptionDetails: { text: string } }>) => trouble.push(`exception: ${e.data.exceptionDetails.text}`));
  page.view.addEventListener("Runtime.consoleAPICalled", (e: MessageEvent<{ type: string; args: { value?: unknown }[] }>) => {
    if (e.data.type === "error" || e.data.type === "assert") trouble.push(`console.${e.data.type}: ${e.data.args.map((a) => String(a.value)).join(" ")}`);
  });
  page.view.addEventListener("Log.entryAdded", (e: MessageEvent<{ entry: { level: string; text: string } }>) => {
    if (e.data.entry.level === "error") trouble.push(`log: ${e.data.entry.text}`);
  });
  return trouble;
}
