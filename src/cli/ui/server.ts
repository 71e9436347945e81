// `li ui`'s HTTP server (Bun.serve): the page, its JSON endpoints (the same objects `li ls --json` and
// `li show --json` print), a leg's output by offset, and server-sent events on the ledger's wake-ups.
// Read-only: every method but GET and HEAD is refused.
import type { Server } from "bun";
import type { OpenedReads, RecentCursor } from "../../ledger/reads.ts";
import type { ChangeWake } from "../../ledger/wake.ts";
import { canonicalKind, ENTITY_KINDS, POLICIES, SUCCESS_STATUS, type EntityKind } from "../../lifecycle/policy.ts";
import { UnknownIdError, UsageError } from "../../util/errors.ts";
import { listEntries, lsJson, type LsQuery } from "../views/ls.ts";
import { readShown, renderJson } from "../views/show.ts";
import { legOutputChunk } from "./leg-output.ts";
import { metricsText } from "../metrics.ts";
import { json, loopbackHost, presentedToken, problem, respond, TOKEN_COOKIE, tokenMatches } from "./http.ts";
import appJs from "./assets/app.js" with { type: "text" };
import appCss from "./assets/app.css" with { type: "text" };
import { INDEX_HTML as indexHtml } from "./page.ts";

export interface UiOptions {
  opened: OpenedReads;
  hostname: string;
  port: number;
  /** Required on every request when set. */
  token: string | null;
  /** $LI_HOME: this host's spool, for /metrics. */
  home: string;
}

/** Rows one list request may ask for (the page pages by asking for more). */
export const MAX_LIST_LIMIT = 1000;

export interface UiServer {
  server: Server<undefined>;
  url: string;
  stop(): Promise<void>;
}

/** Longest host or text filter the list takes (a longer one names nothing li records). */
const MAX_FILTER = 200;

/**
 * The list's filters and page, every one of them part of the ledger's query (listRecent): kind, status,
 * host, text, and `after` (the last row of the page before, as `UPDATED_AT:ID`) for the next page.
 */
function listQuery(url: URL): LsQuery {
  const p = url.searchParams;
  let kinds: readonly EntityKind[] = ENTITY_KINDS;
  const kind = p.get("kind");
  if (kind) {
    const k = canonicalKind(kind);
    if (!k) throw new UsageError(`kind: unknown kind '${kind}'`);
    kinds = [k];
  }
  const status = p.get("status") || undefined;
  if (status !== undefined && !kinds.some((k) => POLICIES[k].statuses.has(status))) throw new UsageError(`status: '${status}' is not a status of ${kinds.length === 1 ? kinds[0] : "any kind"}`);
  const limitText = p.get("limit") ?? "50";
  const limit = Number(limitText);
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIST_LIMIT) throw new UsageError(`limit: ${JSON.stringify(limitText)} is not a whole number from 1 to ${MAX_LIST_LIMIT}`);
  const filter = (name: string): string | undefined => {
    const value = p.get(name)?.trim() || undefined;
    if (value !== undefined && value.length > MAX_FILTER) throw new UsageError(`${name}: longer than ${MAX_FILTER} characters`);
    return value;
  };
  const host = filter("host");
  const text = filter("q");
  const afterText = p.get("after") || undefined;
  let after: RecentCursor | undefined;
  if (afterText !== undefined) {
    const colon = afterText.indexOf(":");
    const updatedAt = colon > 0 ? Number(afterText.slice(0, colon)) : Number.NaN;
    const id = afterText.slice(colon + 1);
    if (!Number.isFinite(updatedAt) || colon < 0 || id.length === 0 || id.length > MAX_FILTER) throw new UsageError(`after: ${JSON.stringify(afterText.slice(0, 80))} is not UPDATED_AT:ID (a row's updated_at and id)`);
    after = { updatedAt, id };
  }
  return { kinds, limit, ...(status !== undefined ? { status } : {}), ...(host !== undefined ? { host } : {}), ...(text !== undefined ? { text } : {}), ...(after !== undefined ? { after } : {}) };
}

/** The statuses the page colours and filters by, from the lifecycle registry (declared once there). */
function vocabulary(): Record<string, { statuses: string[]; terminal: string[]; success: string | null }> {
  return Object.fromEntries(ENTITY_KINDS.map((k) => [k, { statuses: [...POLICIES[k].statuses], terminal: [...POLICIES[k].terminal], success: SUCCESS_STATUS[k] }]));
}

/** Unsettled deliveries the fleet page lists (the newest first). */
const FLEET_DELIVERIES = 200;

/**
 * The fleet page: queues with their counts (as li queue ls lists them, from the schedule store's own
 * reads), the watchers' hosts with when each last dispatched, and the deliveries still owed or dead.
 */
async function fleet(opened: OpenedReads): Promise<Record<string, unknown>> {
  const { schedule, metrics } = opened.reads;
  const [queues, counts, hosts, deliveries, states, owed] = await Promise.all([
    schedule.listQueues(),
    schedule.queueCounts(),
    schedule.listHosts(),
    metrics.unsettledDeliveries(FLEET_DELIVERIES),
    metrics.deliveryStates(),
    metrics.deliveriesOwed(),
  ]);
  const byQueue = new Map(counts.map((c) => [c.queue, c]));
  return {
    now: opened.now(),
    queues: queues.map((q) => {
      const c = byQueue.get(q.name);
      return { ...q, paused: q.paused === 1, running: c?.running ?? 0, queued: c?.queued ?? 0, waiting: c?.waiting ?? 0, oldest_queued_at: c?.oldest_queued_at ?? null };
    }),
    hosts: hosts.map((h) => ({ host_id: h.host_id, host_name: h.host_name, labels: JSON.parse(h.labels) as unknown, seen_at: h.seen_at })),
    delivery_states: Object.fromEntries(states.map((s) => [s.state, s.n])),
    // Every delivery owed, begun or not (li_deliveries_owed): the rows below are only those begun.
    deliveries_owed: owed,
    deliveries,
  };
}

/** One wake for every open page: each event stream waits on its generation. */
class Changes {
  private wake: Promise<ChangeWake> | null = null;
  constructor(private readonly opened: OpenedReads) {}
  get(): Promise<ChangeWake> {
    this.wake ??= this.opened.wake({ trailingMs: [50, 250] });
    return this.wake;
  }
  async close(): Promise<void> {
    if (this.wake) (await this.wake).close();
  }
}

/** `event: change` on every commit another process makes; a comment every 15 s keeps proxies from closing it. */
function eventStream(changes: Changes, opened: OpenedReads, signal: AbortSignal): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return new ReadableStream<Uint8Array>({
    async start(controller) {
      const wake = await changes.get();
      let generation = wake.generation;
      let counter = await opened.reads.changeCounter();
      controller.enqueue(encoder.encode(`retry: 1000\nevent: hello\ndata: ${JSON.stringify({ via: wake.via })}\n\n`));
      while (!signal.aborted) {
        // Without wake-ups (LI_WATCH_FILES=0) the change counter, polled each second, is what moves.
        await wake.changed(generation, wake.watching ? 15_000 : 1000);
        if (signal.aborted) break;
        const now = await opened.reads.changeCounter();
        const moved = wake.generation !== generation || now !== counter;
        generation = wake.generation;
        counter = now;
        try {
          controller.enqueue(encoder.encode(moved ? `event: change\ndata: ${generation}\n\n` : `: idle\n\n`));
        } catch {
          break;
        }
      }
      try {
        controller.close();
      } catch {
        // already closed by the client going away
      }
    },
  });
}

export function startUi(o: UiOptions): UiServer {
  const changes = new Changes(o.opened);
  const streams = new Set<AbortController>();
  const route = async (request: Request, url: URL): Promise<Response> => {
    const path = url.pathname;
    if (path === "/" || path === "/index.html") return respond(indexHtml, 200, "text/html; charset=utf-8");
    if (path === "/assets/app.js") return respond(appJs, 200, "text/javascript; charset=utf-8");
    if (path === "/assets/app.css") return respond(appCss, 200, "text/css; charset=utf-8");
    if (path === "/api/vocabulary") return json(vocabulary());
    if (path === "/api/fleet") return json(await fleet(o.opened));
    if (path === "/api/ls") {
      const { entries, spooled } = await listEntries(o.opened, listQuery(url));
      return json(lsJson(entries, spooled));
    }
    const show = /^\/api\/show\/([^/]+)$/.exec(path);
    if (show) return json(renderJson(await readShown(o.opened, decodeURIComponent(show[1]!))));
    const logs = /^\/api\/logs\/([^/]+)$/.exec(path);
    if (logs) return json(await legOutputChunk(o.opened, decodeURIComponent(logs[1]!), url.searchParams.get("leg"), url.searchParams.get("offset")));
    if (path === "/api/events") {
      const stop = new AbortController();
      streams.add(stop);
      request.signal.addEventListener("abort", () => {
        stop.abort();
        streams.delete(stop);
      });
      return respond(eventStream(changes, o.opened, stop.signal), 200, "text/event-stream; charset=utf-8");
    }
    if (path === "/metrics") return respond(await metricsText({ reads: o.opened.reads, home: o.home }), 200, "text/plain; version=0.0.4; charset=utf-8");
    return problem(404, `no such page: ${path}`);
  };
  const server = Bun.serve({
    hostname: o.hostname,
    port: o.port,
    // An event stream stays open; Bun's default 10 s idle timeout would cut it.
    idleTimeout: 0,
    async fetch(request) {
      const url = new URL(request.url);
      if (request.method !== "GET" && request.method !== "HEAD") return problem(405, "li ui is read-only", { allow: "GET, HEAD" });
      let setCookie: Record<string, string> = {};
      if (o.token !== null) {
        const presented = presentedToken(request, url);
        if (!tokenMatches(presented, o.token)) return problem(401, "this li ui needs its token", { "www-authenticate": 'Bearer realm="li ui"' });
        // The first visit's ?token= becomes a cookie, so the page's own requests carry it.
        if (url.searchParams.get("token") !== null) setCookie = { "set-cookie": `${TOKEN_COOKIE}=${encodeURIComponent(o.token)}; Path=/; HttpOnly; SameSite=Strict` };
      } else if (!loopbackHost(request)) {
        return problem(421, "li ui answers only to a loopback Host without a token");
      }
      try {
        const response = await route(request, url);
        for (const [k, v] of Object.entries(setCookie)) response.headers.set(k, v);
        return response;
      } catch (error) {
        if (error instanceof UsageError) return problem(error instanceof UnknownIdError ? 404 : 400, error.message);
        return problem(500, error instanceof Error ? error.message : String(error));
      }
    },
  });
  const host = server.hostname?.includes(":") ? `[${server.hostname}]` : server.hostname;
  return {
    server,
    url: `http://${host}:${server.port}/`,
    async stop() {
      for (const s of streams) s.abort();
      server.stop(true);
      await changes.close();
    },
  };
}
