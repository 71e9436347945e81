// Wake-ups on a PostgreSQL ledger by LISTEN (SPEC §14): the triggers of migrations 0002_notify_triggers
// and 0005_notify_per_statement NOTIFY at commit on every history row, registration and kill request,
// naming the schema. Bun's `sql.listen` keeps one dedicated connection and re-subscribes after it drops,
// but a notice sent while it was down is lost (STACK.md): so every (re)subscription counts as a change
// too, and the waiter re-queries. The caller's interval poll stays the safety net either way.

import type { SQL } from "bun";
import { ChangeSignal, type ChangeWake, type ListenState } from "../wake.ts";

/** The channels the triggers notify on (drizzle/postgres/0002_notify_triggers.sql, 0005_notify_per_statement.sql). */
export const CHANGES_CHANNEL = "li_changes";
export const KILL_CHANNEL = "li_kill";

/**
 * The channels a watcher of host `host` listens on (drizzle/postgres/0015_watcher_wakeups.sql): its own
 * host's, where a commit that may owe its handlers a delivery or end a run it leased is told, and the
 * fleet's, for what any watcher may have to do (a scheduled run's event, a queue or schedule changed). The
 * host is its machine part, as handlers are registered; channels are per schema.
 */
export function watcherChannels(schema: string, host: string): { host: string; fleet: string } {
  // Bun's own MD5 (the digest node:crypto gives): node:crypto costs a process ~3 ms of CPU to load.
  const md5 = (text: string) => new Bun.CryptoHasher("md5").update(text, "utf8").digest("hex");
  const colon = host.indexOf(":"); // machine:boot -> machine (host/proc.ts machineOf; a folder on the same floor)
  const machine = colon === -1 ? host : host.slice(0, colon);
  return { host: `li_host_${md5(`${schema}:${machine}`)}`, fleet: `li_fleet_${md5(schema)}` };
}

/** A payload's part after `<schema>:`, or null when the notice is another schema's (channels are per database). */
export function noticeFor(payload: string, schema: string): string | null {
  return payload.startsWith(`${schema}:`) ? payload.slice(schema.length + 1) : null;
}

type Client = SQL | Promise<SQL>;

/** The start of what Bun's client warns (console.warn) on every failed try to re-subscribe during an outage. */
const DRIVER_RETRY_WARNING = "bun:sql LISTEN ";
let driverQuieted = false;

/**
 * Keeps Bun's LISTEN retry warnings (`bun:sql LISTEN "li_changes" failed, retrying: …`, one per try, for
 * as long as the server is away) off stderr: li tells an outage itself, once, in its own words (li wait's
 * note, li watch's log). Every other warning passes.
 */
function quietDriverRetries(): void {
  if (driverQuieted) return;
  driverQuieted = true;
  const warn = console.warn.bind(console);
  console.warn = (...args: unknown[]) => {
    if (typeof args[0] === "string" && args[0].startsWith(DRIVER_RETRY_WARNING)) return;
    warn(...args);
  };
}

/**
 * Subscribes `onNotice` to `channel`'s notices for `schema`, and calls `onSubscribed` every time the
 * subscription is (re)established. Returns the unsubscribe. A subscription that cannot be made at all
 * (the server is down when the process starts) is reported once to `onFailed`; the caller's poll goes on.
 */
function subscribe(client: Client, channel: string, schema: string, handlers: { onNotice: (rest: string) => void; onSubscribed: () => void; onFailed?: () => void }): () => void {
  let unsubscribed = false;
  quietDriverRetries();
  const subscription = Promise.resolve(client).then((sql) =>
    sql.listen(
      channel,
      (payload) => {
        if (unsubscribed) return;
        const rest = noticeFor(payload, schema);
        if (rest !== null) handlers.onNotice(rest);
      },
      () => {
        if (!unsubscribed) handlers.onSubscribed();
      },
    ),
  );
  subscription.catch(() => handlers.onFailed?.());
  return () => {
    if (unsubscribed) return;
    unsubscribed = true;
    subscription.then((s) => s.unlisten()).catch(() => {});
  };
}

/**
 * A ChangeWake that moves on every commit of a history row or registration in `schema`, and on every
 * (re)connect of the listening connection. Returned at once; `watching` turns true when the server
 * acknowledges the LISTEN, and that acknowledgement moves the generation too, so a commit between the
 * caller's first check and the LISTEN is not missed (arm, check, wait: STACK.md).
 */
export function listenForChanges(client: Client, schema: string): ChangeWake {
  const signal = new ChangeSignal();
  let listening = false;
  let failed = false;
  const unsubscribe = subscribe(client, CHANGES_CHANNEL, schema, {
    onNotice: () => signal.bump(),
    onSubscribed: () => {
      listening = true;
      signal.bump();
    },
    onFailed: () => {
      listening = false;
      failed = true;
    },
  });
  return {
    get generation() {
      return signal.generation;
    },
    get watching() {
      return listening;
    },
    // Until the server acknowledges the LISTEN (or when it cannot be made) only the caller's poll notices changes.
    get via() {
      return failed ? ("poll" as const) : ("listen" as const);
    },
    changed: (since, ms) => signal.changed(since, ms),
    close: () => {
      unsubscribe();
      signal.close();
    },
  };
}

/** Pauses between tries of a LISTEN that could not be made: 250 ms, doubling, at most 5 s. */
const LISTEN_FIRST_PAUSE_MS = 250;
const LISTEN_MAX_PAUSE_MS = 5000;

/**
 * li watch's wake-up on PostgreSQL (§14 "Many hosts"): moves on a notice of its host's channel or of the
 * fleet's (watcherChannels), never on another host's leg, and on every (re)subscription (a notice may have
 * been lost meanwhile). Its LISTEN is made at the first wait, after the watcher's first pass, so its queries
 * have their connections first. A LISTEN that cannot be made (the server has no free connection, or is
 * away) is tried again with backoff until it is, told to `onListen` when it goes down and when it is back;
 * meanwhile `via` is "poll" (the watcher's safety poll is all there is).
 */
export function listenForWatcher(
  client: () => Client,
  schema: string,
  host: string,
  onListen?: (state: ListenState) => void,
  describe: (error: unknown) => string = String,
  onClosed?: (f: (error: unknown) => void) => () => void,
): ChangeWake {
  const signal = new ChangeSignal();
  const channels = watcherChannels(schema, host);
  let closed = false;
  let started = false;
  let listening = false;
  let down = false;
  let made: { unlisten(): Promise<void> }[] = [];
  let retry: ReturnType<typeof setTimeout> | null = null;
  const onNotice = (payload: string) => {
    if (!closed && noticeFor(payload, schema) !== null) signal.bump();
  };
  // Bun's client re-subscribes by itself after a connection that was listening drops: that is a wake-up
  // too, and the LISTEN is back (down since the drop, told by onClosed).
  const onResubscribed = () => {
    if (closed || made.length === 0) return;
    if (!listening) {
      listening = true;
      if (down) {
        down = false;
        onListen?.({ listening: true });
      }
    }
    signal.bump();
  };
  // The listening connection dropped after the LISTEN was made: down until Bun's re-subscription takes.
  const stopClosed = onClosed?.((error) => {
    if (closed || !listening) return;
    listening = false;
    if (!down) {
      down = true;
      onListen?.({ listening: false, message: describe(error ?? new Error("the listening connection closed")) });
    }
  });
  async function attempt(pauseMs: number): Promise<void> {
    if (closed) return;
    quietDriverRetries();
    const subscriptions: { unlisten(): Promise<void> }[] = [];
    try {
      const sql = await client();
      for (const channel of [channels.host, channels.fleet]) subscriptions.push(await sql.listen(channel, onNotice, onResubscribed));
    } catch (error) {
      for (const s of subscriptions) await s.unlisten().catch(() => {});
      if (closed) return;
      listening = false;
      if (!down) {
        down = true;
        onListen?.({ listening: false, message: describe(error) });
      }
      retry = setTimeout(() => void attempt(Math.min(pauseMs * 2, LISTEN_MAX_PAUSE_MS)), pauseMs);
      return;
    }
    if (closed) {
      for (const s of subscriptions) await s.unlisten().catch(() => {});
      return;
    }
    made = subscriptions;
    listening = true;
    if (down) {
      down = false;
      onListen?.({ listening: true });
    }
    // Anything committed before the LISTEN took is looked for again.
    signal.bump();
  }
  return {
    get generation() {
      return signal.generation;
    },
    get watching() {
      return listening;
    },
    get via() {
      return down ? ("poll" as const) : ("listen" as const);
    },
    changed: (since, ms) => {
      if (!started) {
        started = true;
        void attempt(LISTEN_FIRST_PAUSE_MS);
      }
      return signal.changed(since, ms);
    },
    close: () => {
      closed = true;
      stopClosed?.();
      if (retry !== null) clearTimeout(retry);
      for (const s of made) void s.unlisten().catch(() => {});
      signal.close();
    },
  };
}

/**
 * Calls `onRequest` when a kill request may have been recorded on leg `legId`: on its notice, and on
 * every (re)subscription (the first, and after a reconnect, when a notice may have been lost). The
 * callee re-reads the leg's `kill_requested_at`; a call is a reason to look, not proof of a request.
 * Returns the unsubscribe.
 */
export function listenForKillRequest(client: Client, schema: string, legId: string, onRequest: () => void): () => void {
  return subscribe(client, KILL_CHANNEL, schema, {
    onNotice: (id) => {
      if (id === legId) onRequest();
    },
    onSubscribed: onRequest,
  });
}

/**
 * Calls `onNotice(legId)` on the kill notice of any leg in `schema`, and `onNotice(null)` on every
 * (re)subscription: one LISTEN for all of a host's legs (the watcher's, §20). Returns the unsubscribe.
 */
export function listenForKillRequests(client: Client, schema: string, onNotice: (legId: string | null) => void): () => void {
  return subscribe(client, KILL_CHANNEL, schema, { onNotice: (id) => onNotice(id), onSubscribed: () => onNotice(null) });
}
