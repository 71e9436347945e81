// A loopback TCP proxy between li and the test's PostgreSQL server, to make the network fail on cue
// (§17's outage tests; no real network is used):
// - forward: bytes flow both ways (the default);
// - drop: every connection is closed at once, and new ones are closed as they arrive (a refused, reset link);
// - blackhole: nothing flows and nothing is closed — new connections are accepted and held, bytes
//   are kept back, a close is kept back too (a partition: the peer just stops answering). forward()
//   then delivers what was kept back, in order, as a healed link's retransmissions would;
// - sever: a partition that outlasted TCP. The connections open now are forgotten: li's side of each is
//   closed (its kernel gave up), the server's side stays open and never hears of it (its session lives
//   on, holding its locks, as a server keeps it until keepalives give up on the peer: this proxy's own
//   socket answers the server's probes, so here it lives until the proxy closes). New connections forward.

import type { Socket, TCPSocketListener } from "bun";

export type ProxyMode = "forward" | "drop" | "blackhole";

export interface TcpProxy {
  /** The loopback port li connects to instead of the server's. */
  readonly port: number;
  readonly mode: ProxyMode;
  /** Connections accepted so far (a test proves li reconnected through the proxy). */
  readonly accepted: number;
  /** Connections li opened and has not closed yet (its side: a close kept back by the blackhole counts as closed). */
  readonly openFromLi: number;
  /** Bytes li sent that a blackhole kept back (a test knows li's query is on the silent link). */
  readonly keptBackFromLi: number;
  forward(): void;
  drop(): void;
  blackhole(): void;
  /**
   * Forwards until li sends bytes containing `marker` (e.g. `COMMIT`), delivers them, then black-holes:
   * the server acts on the request, its answer never arrives (a partition at the worst moment).
   */
  blackholeAfter(marker: string): void;
  /** Forgets every connection open now (see the top of the file) and forwards new ones. */
  sever(): void;
  /** `url` (a postgres:// URL of the server) pointed at the proxy instead. */
  via(url: string): string;
  close(): void;
}

/** One side of a proxied connection: what it has not been able to write yet, and a close kept back. */
interface Side {
  socket: Socket<Link> | null;
  pending: Uint8Array[];
  closeAfterPending: boolean;
}

interface Link {
  client: Side;
  upstream: Side;
  closed: boolean;
  /** Forgotten by sever(): nothing more passes either way, and the server's side is never closed. */
  severed: boolean;
}

function flush(side: Side): void {
  const socket = side.socket;
  if (!socket) return;
  while (side.pending.length > 0) {
    const chunk = side.pending[0]!;
    const written = socket.write(chunk);
    if (written < chunk.length) {
      // The rest goes on drain.
      side.pending[0] = chunk.subarray(Math.max(0, written));
      return;
    }
    side.pending.shift();
  }
  if (side.closeAfterPending) socket.end();
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  let mode: ProxyMode = "forward";
  let accepted = 0;
  let openFromLi = 0;
  let keptBackFromLi = 0;
  let armedMarker: Uint8Array | null = null;
  const links = new Set<Link>();
  /** Server sides sever() left open: closed only with the proxy. */
  const severed = new Set<Link>();

  const closeLink = (link: Link) => {
    if (link.closed || link.severed) return;
    link.closed = true;
    links.delete(link);
    link.client.socket?.end();
    link.upstream.socket?.end();
  };
  /** Bytes (or a close) bound for `to`: sent now when forwarding, kept back in a blackhole. */
  const deliver = (link: Link, to: Side, chunk: Uint8Array | null) => {
    if (link.severed) return;
    if (chunk) to.pending.push(chunk);
    else to.closeAfterPending = true;
    if (mode === "forward") flush(to);
    else if (chunk && to === link.upstream) keptBackFromLi += chunk.length;
  };

  const listener: TCPSocketListener<Link> = Bun.listen<Link>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open(client) {
        accepted++;
        openFromLi++;
        const link: Link = { client: { socket: client, pending: [], closeAfterPending: false }, upstream: { socket: null, pending: [], closeAfterPending: false }, closed: false, severed: false };
        client.data = link;
        if (mode === "drop") {
          client.end();
          return;
        }
        links.add(link);
        void Bun.connect<Link>({
          hostname: target.host,
          port: target.port,
          data: link,
          socket: {
            open(upstream) {
              link.upstream.socket = upstream;
              if (mode === "forward") flush(link.upstream);
            },
            data(_upstream, chunk) {
              deliver(link, link.client, new Uint8Array(chunk));
            },
            drain() {
              if (mode === "forward") flush(link.upstream);
            },
            close() {
              deliver(link, link.client, null);
            },
            error() {
              closeLink(link);
            },
          },
        }).catch(() => closeLink(link));
      },
      data(client, chunk) {
        const bytes = new Uint8Array(chunk);
        deliver(client.data, client.data.upstream, bytes);
        if (armedMarker && mode === "forward" && Buffer.from(bytes).includes(armedMarker)) {
          armedMarker = null;
          mode = "blackhole";
        }
      },
      drain(client) {
        if (mode === "forward") flush(client.data.client);
      },
      close(client) {
        openFromLi--;
        if (client.data) deliver(client.data, client.data.upstream, null);
      },
      error(client) {
        if (client.data) closeLink(client.data);
      },
    },
  });

  return {
    port: listener.port,
    get mode() {
      return mode;
    },
    get accepted() {
      return accepted;
    },
    get openFromLi() {
      return openFromLi;
    },
    get keptBackFromLi() {
      return keptBackFromLi;
    },
    forward() {
      mode = "forward";
      armedMarker = null;
      for (const link of [...links]) {
        flush(link.upstream);
        flush(link.client);
      }
    },
    drop() {
      mode = "drop";
      for (const link of [...links]) closeLink(link);
    },
    blackhole() {
      mode = "blackhole";
    },
    blackholeAfter(marker: string) {
      armedMarker = new TextEncoder().encode(marker);
    },
    sever() {
      mode = "forward";
      armedMarker = null;
      for (const link of [...links]) {
        links.delete(link);
        link.severed = true;
        link.client.pending = [];
        link.upstream.pending = [];
        severed.add(link);
        link.client.socket?.end();
      }
    },
    via(url: string) {
      const u = new URL(url);
      u.hostname = "127.0.0.1";
      u.port = String(listener.port);
      return u.toString();
    },
    close() {
      for (const link of [...links]) closeLink(link);
      for (const link of [...severed]) link.upstream.socket?.end();
      severed.clear();
      listener.stop(true);
    },
  };
}
