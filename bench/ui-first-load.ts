// Benchmark `ui-first-load`: li ui's first page load, in headless Chromium (Bun.WebView), on a ledger of
// 100,000 sessions against one of 51 (the floor: the same 50 rows drawn from a small table): the time from
// navigation to the run list drawn (its 50 rows in the DOM), medians over fresh navigations.
// Usage: bun bench/ui-first-load.ts [--rows 100000] [--runs 15]   (build dist/li first; needs chromium-headless-shell)

import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { bigLedger } from "./big-ledger.ts";
import { r2 } from "./floor.ts";

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
};
const ROWS = arg("rows", 100_000);
const RUNS = arg("runs", 15);
const SMALL = 51;
const TARGET_MS = 300;
const LI = join(import.meta.dir, "../dist/li");
const BROWSER = process.env.LI_TEST_BROWSER ?? "/usr/bin/chromium-headless-shell";
const ARGV = ["--no-sandbox", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"];
// A WebView's pending navigation does not keep the process alive: this does, until the end.
const keepAlive = setInterval(() => {}, 1000);
const work = mkdtempSync(join(tmpdir(), "li-bench-ui-"));

const newView = () => new Bun.WebView({ width: 1200, height: 800, backend: { type: "chrome", url: false, path: BROWSER, argv: ARGV } } as ConstructorParameters<typeof Bun.WebView>[0]);

async function serve(home: string): Promise<{ url: string; proc: Bun.Subprocess<"ignore", "pipe", "pipe"> }> {
  const proc = Bun.spawn([LI, "ui", "--listen", "127.0.0.1:0"], { env: { ...process.env, LI_HOME: home }, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const reader = proc.stdout.getReader();
  let out = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`li ui exited: ${await new Response(proc.stderr).text()}`);
    out += new TextDecoder().decode(value);
    const m = /li ui: (http:\S+)/.exec(out);
    if (m) return { url: m[1]!, proc };
  }
}

/** Navigates and polls (every 2 ms) until the list holds its 50 rows: the ms from the navigation's start. */
async function firstLoad(view: Bun.WebView, url: string): Promise<number> {
  const t0 = performance.now();
  await view.navigate(`${url}?n=${Math.random()}`);
  for (;;) {
    if ((await view.evaluate("document.querySelectorAll('#runs tr').length")) === 50) return performance.now() - t0;
    if (performance.now() - t0 > 30_000) throw new Error("the list was never drawn");
    await Bun.sleep(2);
  }
}


const homes = { small: join(work, "small"), big: join(work, "big") };
bigLedger(homes.small, SMALL);
bigLedger(homes.big, ROWS);
const servers = { small: await serve(homes.small), big: await serve(homes.big) };
const view = newView();
const times: Record<string, number[]> = { small: [], big: [] };
for (let round = -2; round < RUNS; round++) {
  for (const size of ["small", "big"] as const) {
    const ms = await firstLoad(view, servers[size].url);
    if (round >= 0) times[size]!.push(ms);
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const small = median(times.small!);
const big = median(times.big!);
console.log(`first load, list drawn: ${SMALL} sessions ${small.toFixed(1)} ms   ${ROWS} sessions ${big.toFixed(1)} ms   ${(big / small).toFixed(2)}× the floor (target ≤ ${TARGET_MS} ms: ${big <= TARGET_MS ? "met" : "NOT met"})`);

console.log(JSON.stringify({ bench: "ui-first-load", runs: RUNS, rows: ROWS, small_rows: SMALL, small_ms: r2(small), big_ms: r2(big), ratio: r2(big / small), target_ms: TARGET_MS, met: big <= TARGET_MS }));
view.close();
for (const s of [servers.small, servers.big]) s.proc.kill("SIGTERM");
clearInterval(keepAlive);
process.exit(0);
