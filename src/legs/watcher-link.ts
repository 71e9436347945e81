// A running leg's link to its host's watcher (SPEC §20): over a local socket the leg names itself; while
// the link is up the watcher writes its heartbeats and forwards its kill requests, so the leg holds no
// connection to the ledger. The socket closes when either side dies (kill -9 included): the leg then
// goes back to its own heartbeat and LISTEN, which re-reads any kill request recorded meanwhile.

import path from "node:path";

/** How long a leg waits for the watcher to take it on; past this it keeps its own connection (and asks again later). */
export const JOIN_TIMEOUT_MS = 5000;
/** One line of the protocol is never longer than this (a leg id and a word). */
export const MAX_LINE = 4096;

/** A leg → watcher line. */
export interface JoinLine {
  leg: string;
}
/** Watcher → leg lines: taken on; asked to stop. */
export type WatcherLine = { ok: true } | { kill: true };

/**
 * `$LI_HOME/watch/<hash of the ledger>.sock`: one per ledger per host, owner-only like the rest of LI_HOME.
 * Bun's own SHA-256 (the same digest as node:crypto's): loading node:crypto cost every leg ~3 ms of CPU.
 */
export function watcherSocketPath(liHome: string, ledgerKey: string): string {
  return path.join(liHome, "watch", `${new Bun.CryptoHasher("sha256").update(ledgerKey).digest("hex").slice(0, 16)}.sock`);
}

/** Splits a stream of bytes into lines; a line past MAX_LINE ends the stream (`false`). */
export function lineReader(onLine: (line: string) => void): (chunk: Uint8Array) => boolean {
  let pending = "";
  const decoder = new TextDecoder();
  return (chunk) => {
    pending += decoder.decode(chunk, { stream: true });
    for (let at = pending.indexOf("\n"); at !== -1; at = pending.indexOf("\n")) {
      onLine(pending.slice(0, at));
      pending = pending.slice(at + 1);
    }
    return pending.length <= MAX_LINE;
  };
}

export interface WatcherLink {
  /** Resolves when the link is gone (the watcher died or stopped, or close() was called). */
  readonly lost: Promise<void>;
  close(): void;
}

/**
 * Asks the watcher listening on `socketPath` to take leg `legId` on; null when none answers within
 * `timeoutMs` (no watcher, or one that does not broker legs): the leg keeps its own connection.
 * `onKill` runs (at most once) when the watcher forwards a kill request.
 */
export async function joinWatcher(socketPath: string, legId: string, onKill: () => void, timeoutMs: number = JOIN_TIMEOUT_MS): Promise<WatcherLink | null> {
  let resolveLost!: () => void;
  const lost = new Promise<void>((resolve) => (resolveLost = resolve));
  let accepted: (ok: boolean) => void = () => {};
  const answer = new Promise<boolean>((resolve) => (accepted = resolve));
  let killed = false;
  const read = lineReader((line) => {
    let message: Partial<{ ok: unknown; kill: unknown }>;
    try {
      message = JSON.parse(line) as typeof message;
    } catch {
      return;
    }
    if (message.ok === true) accepted(true);
    if (message.kill === true && !killed) {
      killed = true;
      onKill();
    }
  });
  let socket: Awaited<ReturnType<typeof Bun.connect>>;
  try {
    socket = await Bun.connect({
      unix: socketPath,
      socket: {
        data(s, chunk) {
          if (!read(chunk)) s.end();
        },
        close() {
          accepted(false);
          resolveLost();
        },
        error() {
          accepted(false);
          resolveLost();
        },
      },
    });
  } catch {
    return null;
  }
  socket.write(`${JSON.stringify({ leg: legId } satisfies JoinLine)}\n`);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs)));
  const ok = await Promise.race([answer, timedOut]);
  clearTimeout(timer);
  if (!ok) {
    socket.end();
    return null;
  }
  return {
    lost,
    close() {
      socket.end();
    },
  };
}
