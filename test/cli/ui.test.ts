// `li ui` end to end: the compiled binary serving a ledger filled with real legs, driven in a real
// headless Chromium (test/helpers/browser.ts), and its endpoints against `li ls --json` / `li show --json`.
import { afterAll, describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import type { Subprocess } from "bun";
import { li, LI_BINARY, liEnv } from "../helpers/cli.ts";
import { tempDir } from "../helpers/temp-dirs.ts";
import { until } from "../helpers/until.ts";
import { ledgerRows } from "../helpers/ledger-rows.ts";
import { browserAvailable, openPage, watchForTrouble, type Page } from "../helpers/browser.ts";

// The screenshots docs/ui.md shows: written there with LI_UI_SCREENSHOTS=1, else to a temp dir (still taken and checked).
const DOCS_IMAGES = process.env.LI_UI_SCREENSHOTS === "1" ? path.join(import.meta.dir, "../../docs/ui") : tempDir("li-ui-shots-");
const spawned: Subprocess[] = [];
const pages: Page[] = [];
/** The files whose creation ends a test's detached leg: made at the end too, so a failed test leaks no leg. */
const goFiles: string[] = [];
afterAll(() => {
  for (const p of pages) p.close();
  for (const p of spawned) if (p.exitCode === null) p.kill("SIGTERM");
  for (const go of goFiles) {
    try {
      fs.writeFileSync(go, "");
    } catch {
      // Its directory is gone already: so is whatever waited on it.
    }
  }
});

const newHome = () => path.join(tempDir("li-ui-"), "home");

async function leg(home: string, args: string[]): Promise<{ session_id: string; branch_id: string; run_id: string }> {
  const r = await li(["agent", "--json", ...args], { home });
  return JSON.parse(r.stdout);
}

/** Starts `li ui` on a free loopback port; resolves with its URL once it listens. */
async function serve(home: string, extra: string[] = [], env: Record<string, string> = {}): Promise<{ url: string; proc: Subprocess<"ignore", "pipe", "pipe"> }> {
  const proc = Bun.spawn([LI_BINARY, "ui", "--listen", "127.0.0.1:0", ...extra], { env: liEnv(home, env), stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  spawned.push(proc);
  let out = "";
  const reader = proc.stdout.getReader();
  const url = await until("li ui prints where it listens", async () => {
    const { value, done } = await reader.read();
    if (done) throw new Error(`li ui exited: ${await new Response(proc.stderr).text()}`);
    out += new TextDecoder().decode(value);
    return /li ui: (http:\S+)/.exec(out)?.[1] ?? null;
  });
  reader.releaseLock();
  return { url, proc };
}

describe("li ui: safe by default", () => {
  test("a non-loopback --listen without a token is refused with exit 2 and one line; the ledger is not created", async () => {
    const home = newHome();
    for (const listen of ["0.0.0.0:7377", "[::]:7377", "192.0.2.1:7377"]) {
      const r = await li(["ui", "--listen", listen], { home });
      expect(r.code).toBe(2);
      expect(r.stderr.trim().split("\n")).toHaveLength(1);
      expect(r.stderr).toContain("--token");
    }
    expect((await li(["ui", "--listen", "nonsense"], { home })).code).toBe(2);
    expect(await ledgerRows(home).exists()).toBe(false);
  });

  test("with --token (or LI_UI_TOKEN) every request needs it: 401 without, 200 with; no endpoint takes a write method", async () => {
    const home = newHome();
    const s = await leg(home, ["--", "true"]);
    const token = "0123456789abcdef0123";
    for (const how of [["--token", token], []]) {
      const { url, proc } = await serve(home, how, how.length === 0 ? { LI_UI_TOKEN: token } : {});
      const endpoints = ["", "assets/app.js", "api/ls", `api/show/${s.session_id}`, `api/logs/${s.session_id}`, "api/vocabulary", "api/events", "metrics"];
      for (const e of endpoints) {
        expect({ e, status: (await fetch(url + e)).status }).toEqual({ e, status: 401 });
        expect({ e, status: (await fetch(url + e, { headers: { authorization: "Bearer wrong-token-wrong-token" } })).status }).toEqual({ e, status: 401 });
        for (const method of ["POST", "PUT", "PATCH", "DELETE"]) {
          expect({ e, method, status: (await fetch(url + e, { method, headers: { authorization: `Bearer ${token}` } })).status }).toEqual({ e, method, status: 405 });
        }
      }
      const ok = await fetch(`${url}api/ls`, { headers: { authorization: `Bearer ${token}` } });
      expect(ok.status).toBe(200);
      // The first visit's ?token= becomes the page's cookie.
      const first = await fetch(`${url}?token=${token}`);
      expect(first.status).toBe(200);
      const cookie = first.headers.get("set-cookie")!.split(";")[0]!;
      expect((await fetch(`${url}api/ls`, { headers: { cookie } })).status).toBe(200);
      proc.kill("SIGTERM");
      await proc.exited;
    }
  });

  test("without a token: every response carries the strict CSP; a Host that is not loopback is refused; writes are refused", async () => {
    const home = newHome();
    await leg(home, ["--", "true"]);
    const { url, proc } = await serve(home);
    for (const e of ["", "assets/app.js", "assets/app.css", "api/ls", "api/vocabulary"]) {
      const r = await fetch(url + e);
      expect(r.status).toBe(200);
      expect(r.headers.get("content-security-policy")).toContain("default-src 'none'");
      expect(r.headers.get("content-security-policy")).toContain("script-src 'self'");
      expect(r.headers.get("x-content-type-options")).toBe("nosniff");
      expect((await fetch(url + e, { method: "POST" })).status).toBe(405);
    }
    expect((await fetch(`${url}api/ls`, { headers: { host: "evil.example:80" } })).status).toBe(421);
    proc.kill("SIGTERM");
    expect(await proc.exited).toBe(0);
  });
});

describe("li ui: one source of truth", () => {
  test("/api/ls and /api/show/ID return what li ls --json and li show --json print", async () => {
    const home = newHome();
    const a = await leg(home, ["--", "sh", "-c", "echo a"]);
    const b = await leg(home, ["--", "sh", "-c", "exit 4"]);
    await leg(home, ["-r", b.branch_id, "--", "true"]);
    const { url, proc } = await serve(home);
    const api = (await (await fetch(`${url}api/ls?limit=50`)).json()) as { entities: Record<string, unknown>[] };
    const cli = JSON.parse((await li(["ls", "--json"], { home })).stdout) as { entities: Record<string, unknown>[] };
    // Ages move between the two reads; everything else is the same object.
    const steady = (e: Record<string, unknown>) => ({ ...e, age_seconds: typeof e.age_seconds, duration_seconds: typeof e.duration_seconds });
    expect(api.entities.map(steady)).toEqual(cli.entities.map(steady));
    expect(api.entities.length).toBe(2);
    for (const id of [a.session_id, b.session_id, b.branch_id.slice(0, 12)]) {
      const page = await (await fetch(`${url}api/show/${id}`)).json();
      expect(page).toEqual(JSON.parse((await li(["show", "--json", id], { home })).stdout));
    }
    expect((await fetch(`${url}api/show/ffffffff-0000`)).status).toBe(404);
    expect((await fetch(`${url}api/ls?status=nonsense`)).status).toBe(400);
    proc.kill("SIGTERM");
    await proc.exited;
  });
});

describe("li ui: the list's filters and pages are the ledger's query", () => {
  type Entity = { id: string; host_name: string | null; command: string[] | null; updated_at: number; branch_id?: string | null };
  const ids = async (url: string, query: string) => ((await (await fetch(`${url}api/ls?${query}`)).json()) as { entities: Entity[] }).entities.map((e) => e.id);

  test("host and text filters find the newest matching rows however many newer rows do not match; pages follow by key, stable under new runs", async () => {
    const home = newHome();
    const alpha = { LI_HOST_ID: "host-a", LI_HOST_NAME: "alpha" };
    const beta = { LI_HOST_ID: "host-b", LI_HOST_NAME: "beta" };
    const run = async (env: Record<string, string>, cmd: string[]) => JSON.parse((await li(["agent", "--json", "--", ...cmd], { home, env })).stdout).session_id as string;
    // Oldest first: two of alpha's with distinctive commands, then beta's newer ones.
    const a1 = await run(alpha, ["sh", "-c", "echo Needle-Built 50%"]);
    const a2 = await run(alpha, ["sh", "-c", "echo plain_word"]);
    const b: string[] = [];
    for (let i = 0; i < 4; i++) b.push(await run(beta, ["true", `xq${i}`]));
    const { url, proc } = await serve(home);
    // The newest alpha row even with limit 1: four newer beta rows before it (a filter after the fetch finds none).
    expect(await ids(url, "host=alpha&limit=1")).toEqual([a2]);
    expect(await ids(url, "host=host-a&limit=50")).toEqual([a2, a1]);
    expect(await ids(url, "host=beta&limit=2")).toEqual([b[3]!, b[2]!]);
    expect(await ids(url, "host=gamma")).toEqual([]);
    // Text: any ASCII case, in the command's words, the id or the reason; %, _ and \ are literal.
    expect(await ids(url, "q=needle-built&limit=1")).toEqual([a1]);
    expect(await ids(url, `q=${encodeURIComponent("0%")}&limit=1`)).toEqual([a1]);
    expect(await ids(url, `q=${encodeURIComponent("%")}`)).toEqual([a1]);
    expect(await ids(url, "q=_&limit=50")).toEqual([a2]);
    expect(await ids(url, `q=${encodeURIComponent("\\")}`)).toEqual([]);
    expect(await ids(url, `q=${a1.slice(0, 13)}`)).toEqual([a1]);
    expect(await ids(url, "q=XQ2&host=beta")).toEqual([b[2]!]);
    expect(await ids(url, "q=xq2&host=alpha")).toEqual([]);
    // A queued run's command is its stored request's.
    const queued = (await li(["agent", "--queue", "later", "--detach", "--", "echo", "Zebra-Queued"], { home })).stdout.trim();
    expect(await ids(url, "q=zebra-queued")).toEqual([queued]);
    expect(await ids(url, "q=zebra-queued&kind=session")).toEqual([]);
    // Pages of two, each after the last row of the one before: together the whole listing, in li ls's order.
    const all = (JSON.parse((await li(["ls", "--json"], { home })).stdout) as { entities: Entity[] }).entities;
    expect(all.map((e) => e.id)).toEqual([queued, ...[...b].reverse(), a2, a1]);
    const page = async (after: Entity | null) => ((await (await fetch(`${url}api/ls?limit=2${after ? `&after=${after.updated_at}:${after.id}` : ""}`)).json()) as { entities: Entity[] }).entities;
    const first = await page(null);
    // A run that starts meanwhile is newer than every row: the pages after the first do not move.
    const late = await run(beta, ["true", "late"]);
    const pagesRead = [first];
    while (pagesRead.at(-1)!.length === 2) pagesRead.push(await page(pagesRead.at(-1)!.at(-1)!));
    expect(pagesRead.map((p) => p.length)).toEqual([2, 2, 2, 1]);
    expect(pagesRead.flat().map((e) => e.id)).toEqual(all.map((e) => e.id));
    expect(await ids(url, "limit=1")).toEqual([late]);
    // With a filter too: alpha's rows one page at a time.
    const [newestAlpha] = ((await (await fetch(`${url}api/ls?host=alpha&limit=1`)).json()) as { entities: Entity[] }).entities;
    expect(await ids(url, `host=alpha&limit=1&after=${newestAlpha!.updated_at}:${newestAlpha!.id}`)).toEqual([a1]);
    for (const bad of ["after=nonsense", "after=12:", "after=:x", `q=${"x".repeat(201)}`]) expect({ bad, status: (await fetch(`${url}api/ls?${bad}`)).status }).toEqual({ bad, status: 400 });
    // The host is the current leg's, kept on the session row: resumed on beta's machine, a1 is beta's, no
    // longer alpha's, by name, by the id's machine part and by the whole host id (MACHINE:BOOT).
    const branch = all.find((e) => e.id === a1)!.branch_id!;
    const moved = await li(["agent", "--json", "-r", branch, "--", "true", "moved"], { home, env: { LI_HOST_ID: "machine-b", LI_HOST_NAME: "beta" } });
    expect(moved.code).toBe(0);
    expect(await ids(url, "host=alpha&limit=50")).toEqual([a2]);
    expect(await ids(url, "host=beta&limit=1")).toEqual([a1]);
    expect(await ids(url, "host=machine-b&limit=50")).toEqual([a1]);
    const movedHost = (JSON.parse((await li(["ls", "--json"], { home })).stdout) as { entities: (Entity & { host_id: string })[] }).entities.find((e) => e.id === a1)!.host_id;
    expect(movedHost.startsWith("machine-b:")).toBe(true);
    expect(await ids(url, `host=${encodeURIComponent(movedHost)}&limit=50`)).toEqual([a1]);
    expect(await ids(url, "host=machine-b:another-boot&limit=50")).toEqual([]);
    proc.kill("SIGTERM");
    await proc.exited;
  });
});

const browser = browserAvailable("ui.test.ts");

describe.skipIf(!browser)("li ui in a real browser", () => {
  test("the list shows the legs; a filter narrows them; a session page shows its legs, history and branch id; screenshots", async () => {
    const home = newHome();
    const ok = await leg(home, ["--", "sh", "-c", "echo built; exit 0"]);
    const bad = await leg(home, ["--", "sh", "-c", "echo broke >&2; exit 5"]);
    await leg(home, ["-r", bad.branch_id, "--", "sh", "-c", "echo fixed"]);
    const { url } = await serve(home);
    const page = openPage();
    pages.push(page);
    const trouble = await watchForTrouble(page);
    await page.view.navigate(url);
    await until("the list is drawn", () => page.eval<number>("document.body.dataset.ready ? document.querySelectorAll('#runs tr').length : 0"));
    const rows = await page.eval<string[]>("[...document.querySelectorAll('#runs tr')].map((r) => r.dataset.id)");
    expect(rows).toEqual([bad.session_id, ok.session_id]);
    fs.mkdirSync(DOCS_IMAGES, { recursive: true });
    await Bun.write(path.join(DOCS_IMAGES, "runs.png"), await page.view.screenshot());
    // The text filter narrows the list to the matching command.
    await page.eval("(() => { const i = document.querySelector('input[name=q]'); i.value = 'built'; i.dispatchEvent(new Event('input')); return 1 })()");
    await until("the filter narrows the list", async () => (await page.eval<string[]>("[...document.querySelectorAll('#runs tr')].map((r) => r.dataset.id)")).join() === ok.session_id);
    // The status filter too.
    await page.eval("(() => { const i = document.querySelector('input[name=q]'); i.value = ''; i.dispatchEvent(new Event('input')); const s = document.querySelector('select[name=status]'); s.value = 'completed'; s.dispatchEvent(new Event('change')); return 1 })()");
    await until("the status filter keeps the completed sessions", async () => (await page.eval<string[]>("[...document.querySelectorAll('#runs tr [data-status]')].map((r) => r.dataset.status)")).join() === "completed,completed");
    await page.eval(`(location.hash = ${JSON.stringify(`#/s/${bad.session_id}`)})`);
    await until("the session page is drawn", () => page.eval<boolean>(`document.querySelector('main h1')?.textContent.includes(${JSON.stringify(bad.session_id)}) && document.querySelectorAll('.timeline .bar').length === 2`));
    const text = await page.eval<string>("document.querySelector('main').innerText");
    expect(text).toContain(`li agent -r ${bad.branch_id}`);
    expect(text).toContain("history");
    expect(text).toContain("running → failed");
    expect(text).toContain("run.failed.exit_nonzero");
    expect(text).toContain("fixed");
    await until("the output is shown", () => page.eval<boolean>("document.querySelector('#output').textContent === 'fixed\\n'"));
    await Bun.write(path.join(DOCS_IMAGES, "session.png"), await page.view.screenshot());
    // At phone width the page still reads: no horizontal scrolling of the list.
    await page.view.resize(390, 800);
    await page.eval("(location.hash = '#/')");
    await until("the list is drawn at phone width", () => page.eval<number>("document.body.dataset.ready ? document.querySelectorAll('#runs tr').length : 0"));
    expect(await page.eval<boolean>("document.documentElement.scrollWidth <= window.innerWidth + 1")).toBe(true);
    await Bun.write(path.join(DOCS_IMAGES, "phone.png"), await page.view.screenshot());
    for (const shot of ["runs.png", "session.png", "phone.png"]) expect(fs.readFileSync(path.join(DOCS_IMAGES, shot)).subarray(1, 4).toString()).toBe("PNG");
    expect(trouble).toEqual([]);
  });

  test("a leg that ends while the page is open changes status without a reload within 1 s; its output appears live", async () => {
    const home = newHome();
    const go = path.join(tempDir("li-ui-go-"), "go");
    goFiles.push(go);
    const detach = await li(["agent", "--detach", "--", "sh", "-c", 'echo first-line; while [ ! -e "$1" ]; do sleep 0.05; done; echo second-line', "sh", go], { home });
    expect(detach.code).toBe(0);
    const id = detach.stdout.trim();
    const { url } = await serve(home);
    const page = openPage();
    pages.push(page);
    const trouble = await watchForTrouble(page);
    await page.view.navigate(url);
    const status = () => page.eval<string | null>(`document.querySelector('#runs tr[data-id=${JSON.stringify(id)}] [data-status]')?.dataset.status ?? null`);
    await until("the running leg is listed", async () => (await status()) === "running");
    await page.eval("(window.__sameDocument = true)");
    await page.eval(`(location.hash = ${JSON.stringify(`#/s/${id}`)})`);
    await until("the first line appears while the leg runs", () => page.eval<boolean>("document.querySelector('#output')?.textContent === 'first-line\\n'"));
    await page.eval("(location.hash = '#/')");
    await until("the list is back", async () => (await status()) === "running").catch(async (e) => {
      throw new Error(`${e.message}: ${await page.eval<string>("document.body.innerText.slice(0, 2000)")}`);
    });
    fs.writeFileSync(go, "");
    const rows = ledgerRows(home);
    let endedAt = 0;
    await until("the ledger records the leg's end", async () => {
      const row = await rows.get<{ status: string }>("SELECT status FROM sessions WHERE id = ?", id);
      if (row?.status !== "completed") return false;
      endedAt = performance.now();
      return true;
    }, { intervalMs: 10 });
    await until("the page shows it completed", async () => (await status()) === "completed", { timeoutMs: 1000, intervalMs: 20 }).catch(async (e) => {
      // Say how late it was (or whether it never came) and what the page's event stream said.
      const late = await until("the page shows it completed at all", async () => (await status()) === "completed", { timeoutMs: 10_000 }).then(() => `it did after ${Math.round(performance.now() - endedAt)} ms`, () => "it never did");
      throw new Error(`${e.message}: ${late}; the page's stream: ${await page.eval<string>("document.getElementById('live').textContent")}`);
    });
    expect(performance.now() - endedAt).toBeLessThan(1000);
    expect(await page.eval<boolean>("window.__sameDocument === true")).toBe(true);
    // The session page follows a running leg's output: both lines, the second written after it opened.
    await page.eval(`(location.hash = ${JSON.stringify(`#/s/${id}`)})`);
    await until("the whole output", () => page.eval<boolean>("document.querySelector('#output')?.textContent === 'first-line\\nsecond-line\\n'"));
    expect(trouble).toEqual([]);
  });

  test("hostile values render as text and no script runs (dialogs, exceptions and console errors watched)", async () => {
    const home = newHome();
    const s = await leg(home, ["--", "sh", "-c", "exit 1", "<script>alert(1)</script>", "<img src=x onerror=alert(2)>"]);
    const summary = `"><img src=x onerror="window.__pwned=1;alert(3)"><script>alert(4)</script>`;
    await ledgerRows(home).run("UPDATE sessions SET status_reason_summary = ? WHERE id = ?", summary, s.session_id);
    await ledgerRows(home).run("UPDATE status_transitions SET reason_summary = ? WHERE entity_id = ?", summary, s.session_id);
    const { url } = await serve(home);
    const page = openPage();
    pages.push(page);
    const trouble = await watchForTrouble(page);
    await page.view.navigate(url);
    await until("the list is drawn", () => page.eval<number>("document.body.dataset.ready ? document.querySelectorAll('#runs tr').length : 0"));
    expect(await page.eval<string>("document.querySelector('#runs td.cmd').textContent")).toBe(`sh -c 'exit 1' '<script>alert(1)</script>' '<img src=x onerror=alert(2)>'`);
    await page.eval(`(location.hash = ${JSON.stringify(`#/s/${s.session_id}`)})`);
    await until("the session page is drawn", () => page.eval<boolean>("document.querySelectorAll('main dd').length > 0"));
    expect(await page.eval<string>("document.querySelector('main').innerText")).toContain(summary);
    expect(await page.eval<number>("document.querySelectorAll('main img, main script').length")).toBe(0);
    expect(await page.eval<unknown>("window.__pwned ?? null")).toBe(null);
    expect(trouble).toEqual([]);
  });

  test("eight pages open at once in one browser all draw and all follow the ledger (one event stream per browser, not one per page)", async () => {
    const home = newHome();
    const go = path.join(tempDir("li-ui-go-"), "go");
    goFiles.push(go);
    const detach = await li(["agent", "--detach", "--", "sh", "-c", 'while [ ! -e "$1" ]; do sleep 0.05; done', "sh", go], { home });
    expect(detach.code).toBe(0);
    const id = detach.stdout.trim();
    const { url } = await serve(home);
    // Bun.WebView drives one Chromium for every view, as a person's tabs share one browser: it keeps six
    // connections to a host, so a stream per page would leave the seventh page never drawn.
    const eight: Page[] = [];
    const status = (page: Page) => page.eval<string | null>(`document.querySelector('#runs tr[data-id=${JSON.stringify(id)}] [data-status]')?.dataset.status ?? null`);
    for (let i = 0; i < 8; i++) {
      const page = openPage(600, 400);
      pages.push(page);
      eight.push(page);
      await page.view.navigate(url);
      await until(`page ${i + 1} lists the running leg`, async () => (await status(page)) === "running");
    }
    fs.writeFileSync(go, "");
    for (const [i, page] of eight.entries()) await until(`page ${i + 1} shows the leg completed without a reload`, async () => (await status(page)) === "completed", { timeoutMs: 10_000 });
    for (const page of eight) page.close();
  });

  test("the list pages fifty rows at a time: older shows the next page, newer goes back", async () => {
    const home = newHome();
    const ids: string[] = [];
    for (let i = 0; i < 55; i++) ids.push((await li(["state", "create", "show", "--id", `show-${String(i).padStart(3, "0")}`], { home })).stdout.trim());
    const newestFirst = [...ids].reverse();
    const { url } = await serve(home);
    const page = openPage();
    pages.push(page);
    const trouble = await watchForTrouble(page);
    await page.view.navigate(url);
    const shown = () => page.eval<string[]>("[...document.querySelectorAll('#runs tr')].map((r) => r.dataset.id)");
    await until("the first page is drawn", async () => (await shown()).length === 50);
    expect(await shown()).toEqual(newestFirst.slice(0, 50));
    expect(await page.eval<boolean>("document.getElementById('newer').hidden")).toBe(true);
    await page.eval("(document.getElementById('older').click(), 1)");
    await until("the second page holds the five oldest", async () => (await shown()).join() === newestFirst.slice(50).join());
    expect(await page.eval<string>("document.getElementById('count').textContent")).toContain("page 2");
    expect(await page.eval<boolean>("document.getElementById('older').hidden")).toBe(true);
    await page.eval("(document.getElementById('newer').click(), 1)");
    await until("back on the first page", async () => (await shown()).join() === newestFirst.slice(0, 50).join());
    expect(trouble).toEqual([]);
  });

  test("the fleet page: queues with their counts, the watchers' hosts, and deliveries owed or dead (their errors as text)", async () => {
    const home = newHome();
    const s = await leg(home, ["--", "sh", "-c", "exit 2"]);
    for (const q of ["builds", "builds"]) expect((await li(["agent", "--queue", q, "--detach", "--", "true"], { home })).code).toBe(0);
    const rows = ledgerRows(home);
    const t = (await rows.get<{ id: string }>("SELECT id FROM status_transitions WHERE entity_id = ? AND status = 'failed'", s.session_id))!;
    const error = "<img src=x onerror=alert(5)> handler exited 1";
    await rows.run("INSERT INTO terminal_deliveries (transition_id, consumer, state, attempts, last_error, created_at, updated_at) VALUES (?, 'notify-ci', 'dead', 8, ?, ?, ?)", t.id, error, Date.now() / 1000 - 60, Date.now() / 1000 - 30);
    await rows.run("INSERT INTO watch_hosts (host_id, host_name, labels, seen_at) VALUES ('machine-b:boot', 'build-b', '[\"gpu\"]', ?)", Date.now() / 1000 - 12);
    const { url } = await serve(home);
    const fleet = (await (await fetch(`${url}api/fleet`)).json()) as { queues: { name: string; queued: number }[]; hosts: { host_name: string }[]; deliveries: { state: string; entity_id: string }[]; delivery_states: Record<string, number> };
    expect(fleet.queues.map((q) => [q.name, q.queued])).toEqual([["builds", 2]]);
    expect(fleet.hosts.map((x) => x.host_name)).toEqual(["build-b"]);
    expect(fleet.deliveries.map((d) => [d.state, d.entity_id])).toEqual([["dead", s.session_id]]);
    expect(fleet.delivery_states.dead).toBe(1);
    const page = openPage();
    pages.push(page);
    const trouble = await watchForTrouble(page);
    await page.view.navigate(`${url}#/fleet`);
    await until("the fleet page is drawn", () => page.eval<boolean>("!!document.getElementById('delivery-counts')"));
    const text = await page.eval<string>("document.querySelector('main').innerText");
    expect(text).toContain("builds");
    expect(text).toContain("build-b");
    expect(text).toContain("notify-ci");
    expect(text).toContain(error);
    expect(text).toContain("dead 1");
    expect(await page.eval<number>("document.querySelectorAll('main img').length")).toBe(0);
    await Bun.write(path.join(DOCS_IMAGES, "fleet.png"), await page.view.screenshot());
    expect(trouble).toEqual([]);
  });
});
