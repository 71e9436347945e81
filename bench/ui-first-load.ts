// Benchmark `ui-first-load`: li ui's first page load, in headless Chromium (Bun.WebView), on a ledger of
// 100,000 sessions against one of 51 (the floor: the same 50 rows drawn from a small table): the time from
// navigation to the run list drawn (its 50 rows in the DOM), medians over fresh navigations.
// Then li ui's memory (resident set, /proc/PID/status) on the big ledger: idle (listening, no page ever
// opened), after the timed loads with no page open, with ten pages open (ten WebViews on the one
// Chromium Bun drives for all, as a person's tabs share a browser: one event stream serves them), with the ten
// after a commit made each redraw its list, and with ten event streams held (pages in ten browsers);
// against the floor of a compiled Bun.serve hello-world, idle.
// Usage: bun bench/ui-first-load.ts [--rows 100000] [--runs 15]   (build dist/li first; needs chromium-headless-shell)

import { mkdtempSync, readFileSync } from "node:fs";
import { loadavg } from "node:os";
import { Database } from "bun:sqlite";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { bigLedger, SESSION_COLUMNS } from "./big-ledger.ts";
import { compileFloor, r2 } from "./floor.ts";

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


/** Resident set of `pid` in MiB, once /proc/PID/cmdline shows it is the program started (a pid is validated before use). */
function rssMiB(pid: number, program: string): number {
  const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0")[0]!;
  if (cmdline !== program) throw new Error(`pid ${pid} is ${cmdline}, not ${program}`);
  const kb = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
  return Number(kb) / 1024;
}

/** Polls `check` every 20 ms until it is true (at most 30 s). */
async function until(what: string, check: () => Promise<boolean>): Promise<void> {
  const t0 = performance.now();
  while (!(await check())) {
    if (performance.now() - t0 > 30_000) throw new Error(`never: ${what}`);
    await Bun.sleep(20);
  }
}

console.log(`load average before: ${loadavg().map((x) => x.toFixed(2)).join(" ")}`);
const homes = { small: join(work, "small"), big: join(work, "big") };
bigLedger(homes.small, SMALL);
bigLedger(homes.big, ROWS);
const servers = { small: await serve(homes.small), big: await serve(homes.big) };
const idleMiB = rssMiB(servers.big.proc.pid, LI);
const floorBin = compileFloor(work, "serve-floor", `Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("ok") }); console.log("up");`);
const floorProc = Bun.spawn([floorBin], { stdin: "ignore", stdout: "pipe", stderr: "inherit" });
await floorProc.stdout.getReader().read();
const floorMiB = rssMiB(floorProc.pid, floorBin);
floorProc.kill("SIGTERM");
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

view.close();
await Bun.sleep(500);
const afterLoadsMiB = rssMiB(servers.big.proc.pid, LI);

// Ten pages open at once, each its own WebView on the list (Bun drives one Chromium for all of them).
const views: Bun.WebView[] = [];
for (let i = 0; i < 10; i++) {
  const v = newView();
  views.push(v);
  await firstLoad(v, servers.big.url);
}
await Bun.sleep(500);
const tenOpenMiB = rssMiB(servers.big.proc.pid, LI);
// A commit by another process: every page is told and redraws its list from the ledger.
for (const v of views) await v.evaluate("(delete document.body.dataset.updated, 1)");
const db = new Database(join(homes.big, "state.db"));
const t = Date.now() / 1000;
db.run(`INSERT INTO sessions ${SESSION_COLUMNS} VALUES (?, 'completed', 'run.completed.ok', ?, ?, ?, ?, 0)`, [crypto.randomUUID(), t, t, t, t]);
db.close();
for (const v of views) await until("each page redrew after the commit", async () => Boolean(await v.evaluate("document.body.dataset.updated || ''")));
const tenRedrawnMiB = rssMiB(servers.big.proc.pid, LI);
for (const v of views) v.close();
// Pages in ten browsers (ten event streams, where one browser's tabs share one): ten streams held open,
// each with the list and the vocabulary fetched as a page does.
const streams = await Promise.all(
  Array.from({ length: 10 }, async () => {
    const stop = new AbortController();
    const body = (await fetch(`${servers.big.url}api/events`, { signal: stop.signal })).body!.getReader();
    await body.read(); // its hello
    await (await fetch(`${servers.big.url}api/vocabulary`)).json();
    await (await fetch(`${servers.big.url}api/ls?limit=50`)).json();
    return { stop, body };
  }),
);
await Bun.sleep(500);
const tenStreamsMiB = rssMiB(servers.big.proc.pid, LI);
for (const s of streams) s.stop.abort();
console.log(
  `li ui resident memory (${ROWS} sessions): idle ${idleMiB.toFixed(1)} MiB (${(idleMiB / floorMiB).toFixed(2)}× a compiled Bun.serve hello-world's ${floorMiB.toFixed(1)} MiB)   after ${2 * (RUNS + 2)} loads, no page open ${afterLoadsMiB.toFixed(1)} MiB   ten pages open ${tenOpenMiB.toFixed(1)} MiB   ten pages after a redraw ${tenRedrawnMiB.toFixed(1)} MiB   ten browsers' streams ${tenStreamsMiB.toFixed(1)} MiB`,
);
console.log(`load average after: ${loadavg().map((x) => x.toFixed(2)).join(" ")}`);
console.log(
  JSON.stringify({
    bench: "ui-first-load",
    runs: RUNS,
    rows: ROWS,
    small_rows: SMALL,
    small_ms: r2(small),
    big_ms: r2(big),
    ratio: r2(big / small),
    target_ms: TARGET_MS,
    met: big <= TARGET_MS,
    rss_mib: { floor_idle: r2(floorMiB), idle: r2(idleMiB), after_loads: r2(afterLoadsMiB), ten_pages: r2(tenOpenMiB), ten_pages_redrawn: r2(tenRedrawnMiB), ten_streams: r2(tenStreamsMiB) },
  }),
);
for (const s of [servers.small, servers.big]) s.proc.kill("SIGTERM");
clearInterval(keepAlive);
process.exit(0);
