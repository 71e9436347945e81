// The watcher's side of a leg's link (SPEC §20): this host's running legs name themselves on a local
// socket; while a leg's link is up the watcher writes its heartbeat (all of them in one transaction per
// period) and forwards the kill requests its one LISTEN hears, so those legs hold no connection. A leg
// whose supervisor dies closes its link (the kernel closes the socket), and is no longer beaten for.

import fs from "node:fs";
import path from "node:path";
import type { Ledger } from "../ledger/ledger.ts";
import { HEARTBEAT_INTERVAL_MS } from "../legs/heartbeat.ts";
import { lineReader, watcherSocketPath, type WatcherLine } from "../legs/watcher-link.ts";
import { isSafeId } from "../util/ids.ts";
import type { WatchLog } from "./log.ts";

export interface LegBroker {
  /** Legs whose link is up. */
  readonly legs: number;
  close(): void;
}

interface Linked {
  send(line: WatcherLine): void;
  /** Told to stop already: a kill is forwarded once. */
  killed: boolean;
}

/**
 * Listens for this host's legs on `$LI_HOME/watch/<ledger>.sock` (the watcher holds the host's lock, so
 * a socket file left there is a dead watcher's, replaced). null when the ledger's backend has no
 * connection budget (SQLite) or the socket cannot be made (the legs then keep their own connections).
 */
export function startLegBroker(ledger: Ledger, liHome: string, log: WatchLog, options: { heartbeatMs?: number } = {}): LegBroker | null {
  const budget = ledger.backend.connections;
  if (!budget) return null;
  const kills = budget;
  const socketPath = watcherSocketPath(liHome, budget.key);
  const linked = new Map<string, Linked>();
  let server: ReturnType<typeof Bun.listen>;
  try {
    fs.mkdirSync(path.dirname(socketPath), { recursive: true, mode: 0o700 });
    fs.rmSync(socketPath, { force: true });
    server = Bun.listen<{ legId: string | null; read: (chunk: Uint8Array) => boolean }>({
      unix: socketPath,
      socket: {
        open(socket) {
          socket.data = {
            legId: null,
            read: lineReader((line) => {
              let message: { leg?: unknown };
              try {
                message = JSON.parse(line) as typeof message;
              } catch {
                return;
              }
              if (socket.data.legId !== null || typeof message.leg !== "string" || !isSafeId(message.leg)) return;
              const legId = message.leg;
              socket.data.legId = legId;
              linked.set(legId, { send: (l) => void socket.write(`${JSON.stringify(l)}\n`), killed: false });
              listenForKills();
              socket.write(`${JSON.stringify({ ok: true } satisfies WatcherLine)}\n`);
              // A kill recorded before the leg joined was heard by nobody: look once now.
              void forwardIfRequested(legId);
            }),
          };
        },
        data(socket, chunk) {
          if (!socket.data.read(chunk)) socket.end();
        },
        close(socket) {
          if (socket.data.legId !== null) linked.delete(socket.data.legId);
        },
        error(socket) {
          if (socket.data.legId !== null) linked.delete(socket.data.legId);
        },
      },
    });
    fs.chmodSync(socketPath, 0o600);
  } catch (error) {
    log({ action: "leg_broker_unavailable", path: socketPath, why: error instanceof Error ? error.message : String(error) });
    return null;
  }

  /** Forwards a kill request on `legId`, read back from its row (a notice is a reason to look, not proof). */
  async function forwardIfRequested(legId: string): Promise<void> {
    const leg = linked.get(legId);
    if (!leg || leg.killed) return;
    try {
      const row = await ledger.backend.getLeg(legId);
      if (row?.kill_requested_at == null || leg.killed) return;
      leg.killed = true;
      leg.send({ kill: true });
      log({ action: "forward_kill", leg_id: legId });
    } catch {
      // Unreachable for now: the next notice or heartbeat looks again.
    }
  }

  /**
   * The LISTEN for kill requests, made when the first leg links (a watcher with no leg listens for none: an
   * idle watcher's one LISTEN is its wake-up's, §14 "Many hosts") and kept; its subscription looks for
   * every linked leg's request once.
   */
  let unlisten: (() => void) | null = null;
  function listenForKills(): void {
    unlisten ??= kills.onAnyKillRequest((legId) => {
      if (legId === null) for (const id of linked.keys()) void forwardIfRequested(id);
      else if (linked.has(legId)) void forwardIfRequested(legId);
    });
  }

  let beating = false;
  const beat = async () => {
    if (beating || linked.size === 0) return;
    beating = true;
    const ids = [...linked.keys()];
    try {
      await ledger.ready();
      const at = ledger.now();
      await ledger.backend.transaction(async (tx) => {
        for (const id of ids) await tx.refreshHeartbeat(id, at);
      });
      // The fallback for a lost notice, as a leg's own heartbeat has it.
      for (const id of ids) await forwardIfRequested(id);
    } catch (error) {
      log({ action: "error", step: "leg_heartbeats", why: error instanceof Error ? error.message : String(error) });
    } finally {
      beating = false;
    }
  };
  const timer = setInterval(() => void beat(), options.heartbeatMs ?? HEARTBEAT_INTERVAL_MS);
  timer.unref?.();

  return {
    get legs() {
      return linked.size;
    },
    close() {
      clearInterval(timer);
      unlisten?.();
      server.stop(true);
      fs.rmSync(socketPath, { force: true });
    },
  };
}
