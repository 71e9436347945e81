// li ui's page: plain DOM, every ledger value set as text (never as HTML), hash routes, live by SSE.
"use strict";
(() => {
  const main = document.getElementById("main");
  const live = document.getElementById("live");
  let vocab = null;
  let view = null;
  // Each navigation draws a new view; a refresh still in flight for an older one (a change event that came
  // just before the user left the page) must not draw over it.
  let shown = 0;

  /** An element; string children become text nodes (never parsed as HTML). */
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") el.className = v;
      else if (k === "style") for (const [p, x] of Object.entries(v)) el.style.setProperty(p, x);
      else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
      else el.setAttribute(k, String(v));
    }
    for (const c of children.flat()) if (c !== null && c !== undefined && c !== false) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
    return el;
  }

  async function get(path) {
    const r = await fetch(path, { headers: { accept: "application/json" }, credentials: "same-origin" });
    const body = await r.json();
    if (!r.ok) throw new Error(body.error || r.statusText);
    return body;
  }

  /** ok / bad / run / wait / off, from the registry: the class colours it, the mark and the word say it without colour. */
  function tone(kind, status) {
    const v = vocab && vocab[kind];
    if (!v) return "off";
    if (v.terminal.includes(status)) return status === v.success ? "ok" : "bad";
    if (status === "running" || status === "active") return "run";
    return "wait";
  }
  const MARK = { ok: "✓", bad: "✗", run: "▶", wait: "…", off: "·" };
  function badge(kind, status) {
    const t = tone(kind, status);
    return h("span", { class: `status s-${t}`, "data-mark": MARK[t], "data-status": status }, status);
  }
  function legend() {
    return h("div", { class: "legend", "aria-label": "legend" },
      h("span", null, badge("session", "completed"), " succeeded"),
      h("span", null, h("span", { class: "status s-bad", "data-mark": MARK.bad }, "failed…"), " ended otherwise"),
      h("span", null, badge("session", "running"), " running"),
      h("span", null, h("span", { class: "status s-wait", "data-mark": MARK.wait }, "queued…"), " waiting"));
  }
  function duration(s) {
    if (s === null || s === undefined) return "-";
    s = Math.max(0, Math.round(s));
    if (s < 60) return `${s}s`;
    if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
    if (s < 86400) return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`;
    return `${Math.floor(s / 86400)}d${Math.floor((s % 86400) / 3600)}h`;
  }
  const iso = (t) => (typeof t === "number" ? new Date(t * 1000).toISOString().replace(".000Z", "Z") : "-");
  /** A command as a shell would read it: words with anything special single-quoted. */
  function words(argv) {
    if (!Array.isArray(argv)) return "-";
    return argv.map((w) => (/^[\w@%+=:,./-]+$/.test(w) ? w : `'${w.replace(/'/g, `'\\''`)}'`)).join(" ");
  }
  const sessionLink = (id, text) => h("a", { href: `#/s/${encodeURIComponent(id)}` }, text);

  // ---- the run list ----
  // Paged by key, not by offset: `after` is the last row of the page before (its updated_at and id), so
  // the ledger seeks to it by index however deep the page is, and runs that start meanwhile (newer, so
  // above the first page) never shift the page being read. `trail` holds the pages before, for "newer".
  const PAGE = 50;
  const listState = { kind: "", status: "", host: "", q: "", after: "", trail: [] };
  function listParams() {
    const p = new URLSearchParams();
    for (const k of ["kind", "status", "host", "q", "after"]) if (listState[k]) p.set(k, listState[k]);
    p.set("limit", String(PAGE));
    return p;
  }
  function firstPage() {
    listState.after = "";
    listState.trail = [];
  }
  function filters(onChange) {
    const statuses = [...new Set(Object.values(vocab).flatMap((v) => v.statuses))];
    const select = (name, values) => h("select", { name, onchange: (e) => { listState[name] = e.target.value; firstPage(); onChange(); } },
      h("option", { value: "" }, "any"), ...values.map((v) => h("option", { value: v, selected: listState[name] === v }, v)));
    let timer = null;
    const input = (name, placeholder) => h("input", { name, type: "search", placeholder, value: listState[name], oninput: (e) => {
      listState[name] = e.target.value.trim();
      firstPage();
      clearTimeout(timer);
      timer = setTimeout(onChange, 200);
    } });
    return h("form", { class: "filters", role: "search", onsubmit: (e) => e.preventDefault() },
      h("label", null, "status", select("status", statuses)),
      h("label", null, "kind", select("kind", Object.keys(vocab))),
      h("label", null, "host", input("host", "host name or id")),
      h("label", null, "text", input("q", "id, command, reason")));
  }
  async function listView() {
    const mine = shown;
    const table = h("tbody", { id: "runs" });
    let last = null;
    const newest = h("button", { type: "button", id: "newest", onclick: () => { firstPage(); refresh(); } }, "newest");
    const newer = h("button", { type: "button", id: "newer", onclick: () => { listState.after = listState.trail.pop() || ""; refresh(); } }, "newer");
    const older = h("button", { type: "button", id: "older", onclick: () => {
      if (!last) return;
      listState.trail.push(listState.after);
      listState.after = `${last.updated_at}:${last.id}`;
      refresh();
    } }, "older");
    const count = h("p", { id: "count", class: "legend" });
    async function refresh() {
      const body = await get(`/api/ls?${listParams()}`);
      if (mine !== shown) return;
      table.replaceChildren(...body.entities.map((e) => h("tr", { "data-id": e.id },
        h("td", { class: "mono" }, e.kind === "session" ? sessionLink(e.id, e.short_id) : e.short_id),
        h("td", null, badge(e.kind, e.status)),
        h("td", { class: "wide" }, e.reason || "-"),
        h("td", { class: "wide" }, e.kind),
        h("td", { class: "wide" }, e.host_name || e.host_id || "-"),
        h("td", null, duration(e.age_seconds)),
        h("td", null, duration(e.duration_seconds)),
        h("td", { class: "wide" }, e.legs === null ? "-" : String(e.legs)),
        h("td", { class: "cmd" }, words(e.command)))));
      last = body.entities.length > 0 ? body.entities[body.entities.length - 1] : null;
      const page = listState.trail.length + 1;
      count.textContent = `page ${page}: ${body.entities.length} shown, newest first`;
      older.hidden = body.entities.length < PAGE;
      newer.hidden = !listState.after;
      newest.hidden = listState.trail.length < 2;
    }
    main.replaceChildren(
      h("h1", null, "Runs"), filters(refresh), legend(),
      h("table", { class: "runs" }, h("thead", null, h("tr", null, ...["id", "status", "reason", "kind", "host", "age", "duration", "legs", "command"].map((c) => h("th", { class: ["reason", "kind", "host", "legs"].includes(c) ? "wide" : null }, c)))), table),
      count, h("nav", { class: "pager", "aria-label": "pages" }, newest, newer, older));
    await refresh();
    return { refresh };
  }

  // ---- one session ----
  function timeline(body) {
    const legs = body.legs || [];
    const times = [...legs.flatMap((l) => [l.started_at, l.ended_at]), ...body.transitions.map((t) => t.created_at)].filter((t) => typeof t === "number");
    const now = Date.now() / 1000;
    const start = Math.min(...times);
    const end = Math.max(...times, ...legs.filter((l) => l.ended_at === null).map(() => now));
    const span = Math.max(end - start, 1);
    const pct = (t) => `${((t - start) / span) * 100}%`;
    const box = h("div", { class: "timeline", role: "img", "aria-label": `legs and transitions over ${duration(span)}` });
    for (const l of legs) {
      const to = l.ended_at ?? now;
      box.append(h("div", { class: `bar s-${tone("session", l.status)}`, title: `leg ${l.seq}: ${l.status}` },
        h("span", { style: { left: pct(l.started_at), width: `${((to - l.started_at) / span) * 100}%` } }),
        h("em", null, `leg ${l.seq} · ${l.status} · ${duration(to - l.started_at)}`)));
    }
    for (const t of body.transitions) box.append(h("div", { class: "tick", style: { left: pct(t.created_at) }, title: `${t.previous_status ?? "-"} → ${t.status} ${iso(t.created_at)}` }));
    return box;
  }
  function rows(headers, data) {
    return h("table", null, h("thead", null, h("tr", null, ...headers.map((x) => h("th", null, x)))), h("tbody", null, ...data.map((r) => h("tr", null, ...r.map((c) => h("td", null, c))))));
  }
  async function sessionView(id) {
    const mine = shown;
    const output = h("pre", { class: "output", id: "output" });
    const outputNote = h("p", { class: "legend", id: "output-note" });
    let follow = null;
    async function refresh() {
      const body = await get(`/api/show/${encodeURIComponent(id)}`);
      if (mine !== shown) return;
      const e = body.entity;
      const leg = (body.legs || []).find((l) => l.id === e.current_leg_id) || null;
      const dl = h("dl", { class: "summary" });
      const field = (k, v) => dl.append(h("dt", null, k), h("dd", null, v));
      field("status", h("span", null, badge(body.kind, e.status), e.status_reason_code ? ` (${e.status_reason_code})` : ""));
      if (e.status_reason_summary) field("summary", e.status_reason_summary);
      for (const b of body.branches || []) field("resume", h("code", { class: "branch" }, `li agent -r ${b.id} -- …`));
      if (body.host) field("host", body.host.name ? `${body.host.name} (${body.host.id})` : String(body.host.id ?? "-"));
      if (leg) field("command", h("code", null, words(leg.command)));
      if (leg && leg.cwd) field("cwd", leg.cwd);
      if (leg) field("started", iso(leg.started_at));
      if (leg) field("duration", leg.ended_at === null ? `${duration(Date.now() / 1000 - leg.started_at)} so far` : duration(leg.ended_at - leg.started_at));
      if (body.run_dir) field("run dir", body.run_dir);
      if (body.artifact_dir) field("artifacts", body.artifact_dir);
      const parts = [h("h1", null, `${body.kind} `, h("span", { class: "mono" }, e.id)), legend(), dl];
      if ((body.legs || []).length > 0 || body.transitions.length > 0) parts.push(h("h2", null, "timeline"), timeline(body));
      if ((body.legs || []).length > 0) parts.push(h("h2", null, "legs"), rows(["leg", "run", "started", "ended", "status", "reason", "exit", "host"], body.legs.map((l) => [String(l.seq), l.run_id, iso(l.started_at), l.ended_at === null ? "running" : iso(l.ended_at), badge("session", l.status), l.reason_code || "-", l.exit_code === null ? "-" : String(l.exit_code), l.host_name || l.host_id || "-"])));
      parts.push(h("h2", null, "history"), rows(["at", "move", "reason", "source", "summary"], body.transitions.map((t) => [iso(t.created_at), `${t.previous_status ?? "-"} → ${t.status}`, t.reason_code, t.source + (t.actor ? `:${t.actor}` : ""), t.reason_summary || ""])));
      const v = body.artifact_verification;
      if (v && typeof v === "object") parts.push(h("h2", null, `artifacts: ${v.status}`), rows(["id", "path", "required", "produced"], (v.artifacts || []).map((a) => [String(a.id), String(a.path), a.required === false ? "optional" : "required", a.produced ? "produced" : "missing"])));
      if (Array.isArray(body.evidence) && body.evidence.length > 0) parts.push(h("h2", null, "evidence"), h("pre", { class: "output" }, body.evidence.map((x) => JSON.stringify(x)).join("\n")));
      if (body.deliveries.length > 0) parts.push(h("h2", null, "notices and deliveries"), rows(["consumer", "state", "attempts", "last error"], body.deliveries.map((d) => [d.consumer, d.state, String(d.attempts), d.last_error || ""])));
      if (body.callbacks.length > 0) parts.push(h("h2", null, "handlers"), rows(["consumer", "scope", "enabled", "command"], body.callbacks.map((c) => [c.consumer, c.scope, c.enabled ? "enabled" : "disabled", words(c.argv)])));
      if (body.kind === "session" && (body.legs || []).length > 0) parts.push(h("h2", null, "output", leg ? ` (leg ${leg.seq})` : ""), outputNote, output);
      main.replaceChildren(...parts);
      if (body.kind === "session" && (body.legs || []).length > 0 && !follow) follow = followOutput();
    }
    /** The current leg's output from the offset reached; asked again every 500 ms while the leg runs. */
    function followOutput() {
      let offsets = [];
      let seq = null;
      let stopped = false;
      (async function loop() {
        while (!stopped && output.isConnected) {
          let chunk;
          try {
            chunk = await get(`/api/logs/${encodeURIComponent(id)}?offset=${offsets.join(",")}`);
          } catch (err) {
            outputNote.textContent = String(err.message);
            break;
          }
          if (seq !== null && chunk.seq !== seq) { output.textContent = ""; offsets = []; }
          seq = chunk.seq;
          if (chunk.error) outputNote.textContent = chunk.error;
          else outputNote.textContent = chunk.running ? `leg ${chunk.seq} is running: following` : `leg ${chunk.seq}: ${chunk.status}`;
          let grew = false;
          chunk.files.forEach((f, i) => { if (f.text) { output.append(document.createTextNode(f.text)); grew = true; } offsets[i] = f.next_offset; });
          if (grew) output.scrollTop = output.scrollHeight;
          if (!chunk.running && !grew) break;
          await new Promise((r) => setTimeout(r, grew ? 50 : 500));
        }
        follow = null;
      })();
      return { stop: () => { stopped = true; } };
    }
    await refresh();
    return { id, refresh: async () => { await refresh(); if (!follow && output.isConnected) follow = followOutput(); } };
  }

  // ---- queues, watchers, deliveries ----
  async function fleetView() {
    const mine = shown;
    const box = h("div", { id: "fleet" });
    async function refresh() {
      const body = await get("/api/fleet");
      if (mine !== shown) return;
      const ago = (t) => (typeof t === "number" ? `${duration(body.now - t)} ago` : "-");
      const st = body.delivery_states;
      box.replaceChildren(
        h("h2", null, "queues"),
        body.queues.length === 0 ? h("p", { class: "legend" }, "no queues (li agent --queue NAME makes one)") :
          rows(["queue", "running", "queued", "waiting", "oldest queued", "parallel", "scope", "paused"], body.queues.map((q) => [q.name, String(q.running), String(q.queued), String(q.waiting), ago(q.oldest_queued_at), q.parallel === 0 ? "unlimited" : String(q.parallel), q.scope, q.paused ? "paused" : "no"])),
        h("h2", null, "watchers"),
        body.hosts.length === 0 ? h("p", { class: "legend" }, "no watcher has dispatched scheduled runs yet (li watch)") :
          rows(["host", "id", "labels", "last pass"], body.hosts.map((x) => [x.host_name || "-", x.host_id, Array.isArray(x.labels) ? x.labels.join(", ") : "", ago(x.seen_at)])),
        h("h2", null, "deliveries"),
        h("p", { id: "delivery-counts" }, `owed ${body.deliveries_owed} · dead ${st.dead || 0} · delivered ${st.acked || 0}`),
        body.deliveries.length === 0 ? h("p", { class: "legend" }, body.deliveries_owed > 0 ? "none begun yet: a watcher (li watch) on the handler's host delivers them" : "nothing owed, nothing dead") :
          rows(["entity", "event", "handler", "state", "attempts", "next try", "last error"], body.deliveries.map((d) => [d.entity_type === "session" ? sessionLink(d.entity_id, d.entity_id.slice(0, 8)) : d.entity_id.slice(0, 8), badge(d.entity_type, d.status), d.consumer, h("span", { class: d.state === "dead" ? "status s-bad" : "status s-wait", "data-mark": d.state === "dead" ? MARK.bad : MARK.wait }, d.state), String(d.attempts), d.next_attempt_at ? iso(d.next_attempt_at) : "-", d.last_error || ""])));
    }
    main.replaceChildren(h("h1", null, "Fleet"), box);
    await refresh();
    return { refresh };
  }

  async function route() {
    const m = /^#\/s\/(.+)$/.exec(location.hash);
    const mine = (shown += 1);
    view = null;
    try {
      const drawn = m ? await sessionView(decodeURIComponent(m[1])) : location.hash === "#/fleet" ? await fleetView() : await listView();
      if (mine !== shown) return;
      view = drawn;
      document.body.dataset.ready = String(Date.now());
    } catch (err) {
      if (mine === shown) main.replaceChildren(h("p", { class: "error" }, String(err.message)));
    }
  }

  let pending = null;
  function changed() {
    if (pending) return;
    pending = setTimeout(async () => {
      pending = null;
      try { if (view) await view.refresh(); document.body.dataset.updated = String(Date.now()); } catch { /* the next change tries again */ }
    }, 30);
  }
  /**
   * One event stream per browser, however many of its tabs show li ui: a browser keeps at most six
   * connections to a host, so six tabs each holding a stream would leave a seventh waiting for ever. The
   * tab that holds the lock (Web Locks) keeps the stream and passes each change to the others over a
   * BroadcastChannel; when it closes, the lock passes to another tab, which opens the stream.
   */
  function connect() {
    const shared = typeof BroadcastChannel === "function" && navigator.locks ? new BroadcastChannel("li-ui-events") : null;
    function stream() {
      return new Promise(() => {
        const events = new EventSource("/api/events");
        events.addEventListener("hello", () => {
          live.textContent = "live";
          if (shared) shared.postMessage("hello");
        });
        events.addEventListener("change", () => {
          changed();
          if (shared) shared.postMessage("change");
        });
        events.onerror = () => {
          live.textContent = "reconnecting…";
          if (shared) shared.postMessage("lost");
        };
      });
    }
    if (!shared) { stream(); return; }
    shared.onmessage = (e) => {
      if (e.data === "change") { live.textContent = "live"; changed(); }
      else if (e.data === "hello") live.textContent = "live";
      else if (e.data === "lost") live.textContent = "reconnecting…";
    };
    // Held by another tab: its stream serves this one too (it says so on the next change or reconnect).
    navigator.locks.query().then((state) => {
      if ((state.held || []).some((l) => l.name === "li-ui-events") && live.textContent !== "live") live.textContent = "live (shared)";
    });
    navigator.locks.request("li-ui-events", stream);
  }

  (async () => {
    vocab = await get("/api/vocabulary");
    window.addEventListener("hashchange", route);
    await route();
    connect();
  })();
})();
