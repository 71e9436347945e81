// One PostgreSQL ledger connection pool, opened lazily (SPEC §14, design decision 6): `openLedger` and
// `openReads` stay synchronous; the first operation awaits the one `ready` promise, which connects,
// reads the version row and the server's clock in the same round trip, and migrates when the ledger
// may be created (or is older). A missing li schema is "nothing recorded yet" (exit 2) for commands
// that must not create one, as a missing SQLite file is.

import { SQL } from "bun";
import { existsSync } from "node:fs";
import { LedgerUnavailableError, UsageError } from "../../util/errors.ts";
import { NO_PATIENCE, type Patience } from "../patience.ts";
import { callDeadlineMs, clientOptions, connectPgWith, quoteIdent, sessionLimits, type PgClient, type PoolShape, type SessionLimits } from "./client.ts";
import { Reachability } from "./availability.ts";
import { ServerClock, SERVER_NOW_SQL, SESSION_START_SQL } from "./clock.ts";
import { asPgLedgerError } from "./errors.ts";
import { migratePg, versionColumnsSql, versionOf, versionTableName } from "./migrate.ts";
import { MIGRATIONS } from "./migrations.gen.ts";
import { targetName, type PgTarget } from "./options.ts";
import { slotCount, slotDir, waitForSlot, type Slot } from "./slots.ts";

/** What the first round trip learns: the version row (null: no li schema yet), the session's schema and the server's clock. */
export interface FirstAnswer {
  version: number | null;
  /** The schema the session's unqualified names resolve to (current_schema(), null: none); undefined when no version row was read. */
  currentSchema?: string | null;
  serverNow: number | null;
  /** When the server began the session this round trip opened (its clock). */
  sessionStart: number | null;
  sent: number;
  received: number;
}

/** A connected pool and its first round trip's answer: what opening a ledger starts with. */
export interface Handshake {
  client: PgClient;
  first: FirstAnswer;
}

/** The host's connection slots for this ledger (slots.ts): where they are and how many. */
export interface SlotPlace {
  dir: string;
  count: number;
}

/**
 * Where this process takes its slots for `target`, or null where it takes none: a long-lived command
 * (slot-use.ts), or a read command on a LI_HOME that does not exist (it must leave nothing behind, and a
 * host without one runs no legs to share the server with).
 */
export function slotPlace(target: PgTarget, liHome: string | undefined, longLived: boolean, mayCreateHome = true): SlotPlace | null {
  if (longLived || liHome === undefined) return null;
  if (!mayCreateHome && !existsSync(liHome)) return null;
  return { dir: slotDir(liHome, `${targetName(target)}#${target.schema}`), count: slotCount() };
}

/** Closes a pool, then gives back the slot it held. */
function closeClient(client: PgClient, timeout: number | "graceful"): Promise<void> {
  const closing = timeout === "graceful" ? client.close() : client.sql.close({ timeout });
  return closing.finally(() => slotOf.get(client)?.release());
}
const slotOf = new WeakMap<PgClient, Slot>();

/** A handshake under way: its outcome, and a way to give it up while it is still connecting. */
export interface PendingHandshake {
  result: Promise<Handshake>;
  /** Gives the connection attempt up at once (result then fails as unreachable); nothing once it connected. */
  abort(): void;
  /** For a handshake nobody will use: gives the attempt up, or closes the connection it already made. */
  discard(): void;
}

/**
 * Connects and reads the version row and the server's clock in the same round trip. Nothing is created
 * or migrated yet: that is PgConnection's open, once a command is past its validation.
 */
export function handshake(target: PgTarget, shape: PoolShape, clock: ServerClock, slot: Slot | null = null): PendingHandshake {
  const controller = new AbortController();
  const result = connectPgWith(target, (sql) => readFirst(sql, target.schema, clock), shape, controller.signal).then(
    (shaken) => {
      if (slot) slotOf.set(shaken.client, slot);
      return shaken;
    },
    (error) => {
      slot?.release();
      throw error;
    },
  );
  const abort = () => controller.abort();
  const discard = () => {
    abort();
    void result.then(({ client }) => closeClient(client, 0)).catch(() => {});
  };
  return { result, abort, discard };
}

export interface PgConnectionOptions {
  /** false for read-only commands: a missing li schema is "nothing recorded yet" and is not created. */
  create: boolean;
  /** Connections in the pool (a leg's heartbeat and its teardown may overlap) and statement naming (client.ts). */
  shape?: Omit<PoolShape, "limits">;
  /** This host's clock in Unix seconds (default util/host-clock.ts); tests skew it. */
  hostClock?: () => number;
  /** A handshake already under way for this target and shape (early.ts), taken by the first open. */
  handshake?: PendingHandshake;
  /** How long calls wait for an unreachable server (default: one attempt each). */
  patience?: Patience;
  /** The host's connection slots each pool takes one of before it connects (§20, slots.ts); none when absent. */
  slots?: SlotPlace | null;
}

/** Pauses between connection attempts while the server is unreachable: 250 ms, doubling, at most 1 s (a restarted server is seen within a second). */
const FIRST_PAUSE_MS = 250;
const MAX_PAUSE_MS = 1000;

type Attempt<T> = { ok: true; value: T } | { ok: false; error: unknown; connected: boolean };

export class PgConnection {
  /** `postgres://HOST:PORT/DATABASE`: the only way li names this ledger. */
  readonly name: string;
  readonly clock: ServerClock;
  /** When this process last regained the ledger after losing it (availability.ts). */
  readonly reachability: Reachability;
  private ready: Promise<PgClient> | null = null;
  private readonly limits: SessionLimits;
  /** One call's deadline (client.ts callDeadlineMs). */
  readonly deadlineMs: number;
  private measuring = false;
  private closed = false;
  private early: PendingHandshake | undefined;
  /** The handshake the open in progress waits for: given up by close(). */
  private connecting: PendingHandshake | undefined;
  /** Monotonic ms after which an unreachable server is no longer waited for: set by the first call (Patience). */
  private giveUpAtMs: number | null = null;
  /** Whether the current outage was told to the patience's onWait. */
  private toldWaiting = false;
  /** Every call started meanwhile ends by then (monotonic ms; Backend.cutCallsAt), or null. */
  private cutAtMs: number | null = null;
  /** Why the last attempt failed on the ledger (unreachable or refused); cleared by an answer. */
  private lastFailure: LedgerUnavailableError | null = null;
  /** Aborted by close(): a pause between attempts ends with it. */
  private readonly shut = new AbortController();
  /** How many times release() was called: an attempt it overlapped gives back the pool it opened after. */
  private releases = 0;
  /** The slot the next open connects with, taken (or being waited for) by the attempt that opens it. */
  private slotFirst: Promise<Slot | null> | null = null;
  /** Aborted when the open in progress is given up (expire, close): its wait for a slot ends with it. */
  private slotWait: AbortController | null = null;
  /** Pools given back by release() whose queries may still run: closed at once when the link proves silent (expire). */
  private readonly draining = new Set<PgClient>();
  /** How many times a call's deadline gave the pool up (expire), and why the last time. */
  private drops = 0;
  private dropReason: LedgerUnavailableError | null = null;
  /** A call's deadline gave the pool up and no call was answered since: the link is silent, nothing on it is waited for. */
  private silent = false;

  constructor(
    readonly target: PgTarget,
    private readonly options: PgConnectionOptions,
  ) {
    this.name = targetName(target);
    this.clock = new ServerClock(options.hostClock);
    this.reachability = new Reachability(() => this.clock.now());
    this.limits = sessionLimits();
    this.deadlineMs = callDeadlineMs(this.limits, target.connectTimeoutSeconds);
    this.early = options.handshake;
  }

  get schema(): string {
    return this.target.schema;
  }

  /** The pool, connected and migrated (the first call opens it; later calls share its promise until it fails). */
  async pool(): Promise<SQL> {
    if (this.closed) throw new LedgerUnavailableError(this.name, "the ledger was closed");
    if (!this.ready) {
      const opening = this.open();
      this.ready = opening;
      // A failed open is not kept: the next call connects again (a leg retries through an outage, §17).
      opening.catch((error) => {
        if (this.ready === opening) this.ready = null;
        if (error instanceof LedgerUnavailableError && error.unreachable) this.reachability.lose();
      });
    }
    const { sql } = await this.ready;
    if (this.clock.stale() && !this.measuring) void this.measureClock(sql);
    return sql;
  }

  /** Runs `fn` on the pool, within the call deadline; a failure that is about the ledger becomes the exit-78 error naming it. */
  async run<T>(fn: (sql: SQL) => Promise<T>): Promise<T> {
    return this.bounded(async (sql) => {
      try {
        const result = await fn(sql);
        this.reachability.reach();
        return result;
      } catch (error) {
        throw this.fault(error);
      }
    });
  }

  /**
   * `call` on the pool, given up after the call deadline: Bun's client waits on a connection that
   * stopped answering without closing (a partition, a frozen server) for as long as TCP lets it. On
   * expiry the pool is dropped (its connections may all be dead; closing them makes the server roll
   * back what they had open once it hears of it) and the call fails as unreachable, to be retried.
   *
   * A call that could not even get a connection (the server down, or not answering the handshake) sent
   * nothing, so it is tried again while the patience lasts (§17: a command started during an outage
   * waits for it); each attempt's connecting is cut to what is left of it (a call with none left still
   * gets one connect timeout). `withinMs` (and Backend.cutCallsAt) cut the whole call, connecting
   * included, to the caller's own deadline.
   */
  async bounded<T>(call: (sql: SQL) => Promise<T>, withinMs = Infinity): Promise<T> {
    const patience = this.options.patience ?? NO_PATIENCE;
    const startedMs = performance.now();
    this.giveUpAtMs ??= startedMs + patience.seconds * 1000;
    if (this.cutAtMs !== null) withinMs = Math.min(withinMs, this.cutAtMs - startedMs);
    let pause = FIRST_PAUSE_MS;
    for (let first = true; ; first = false) {
      const outcome = await this.attempt(call, first, withinMs - (performance.now() - startedMs));
      if (outcome.ok) {
        this.toldWaiting = false;
        this.lastFailure = null;
        this.silent = false;
        return outcome.value;
      }
      const { error, connected } = outcome;
      if (error instanceof LedgerUnavailableError) this.lastFailure = error;
      const left = Math.min(this.giveUpAtMs - performance.now(), withinMs - (performance.now() - startedMs));
      const waitable = !connected && error instanceof LedgerUnavailableError && error.unreachable && !this.closed;
      if (!waitable || left <= 0 || patience.signal?.aborted) throw error;
      if (!this.toldWaiting) patience.onWait?.(error);
      this.toldWaiting = true;
      await pauseFor(Math.min(pause, left), [patience.signal, this.shut.signal]);
      pause = Math.min(pause * 2, MAX_PAUSE_MS);
    }
  }

  /** One attempt; `withinMs`: what the caller has left (its own deadline: li kill's grace, a leg's --ledger-retry). */
  private async attempt<T>(call: (sql: SQL) => Promise<T>, first: boolean, withinMs: number): Promise<Attempt<T>> {
    const connectTimeoutMs = this.target.connectTimeoutSeconds * 1000;
    // §20: one of the host's slots before connecting. A caller with a deadline of its own (a leg's setup and
    // teardown: what is left of --ledger-retry) waits its turn until then: other li processes of this host
    // holding the slots are a queue, not an outage, and a burst of legs must not be told the ledger is
    // unreachable. Any other call waits as long as its patience lasts (at least a connect timeout). The
    // connect's time starts once it has one.
    const waitedFrom = performance.now();
    const releases = this.releases;
    const drops = this.drops;
    const waited = !this.ready && this.options.slots && !this.early;
    if (waited) {
      try {
        this.slotFirst ??= this.takeSlot(Number.isFinite(withinMs) ? withinMs : Math.max(this.giveUpAtMs! - waitedFrom, connectTimeoutMs));
        // A wait another call began (with its own, longer deadline) is shared, but this call stops at its own.
        const taking = this.slotFirst;
        if ((await untilOrAfter(taking, withinMs)) === TIMED_OUT) return { ok: false, error: this.slotsTaken(withinMs), connected: false };
      } catch (error) {
        // The next attempt waits afresh.
        this.slotFirst = null;
        return { ok: false, error, connected: false };
      }
      withinMs -= performance.now() - waitedFrom;
    }
    const startedMs = performance.now();
    // What the patience had left before the slot's wait: the wait does not eat the connect's own time.
    const left = this.giveUpAtMs! - waitedFrom;
    const callMs = Math.min(this.deadlineMs, withinMs);
    // The deadline holds (li kill --grace 2 is 2 s); only a command with no time at all (--ledger-retry 0) still gets one connect timeout.
    const connectMs = Math.min(callMs, first && left <= 0 ? connectTimeoutMs : left);
    // Nothing left to try with: the failure that used the time up says why, not a "no answer within 0s".
    if (connectMs <= 0 && !this.ready && this.lastFailure) return { ok: false, error: this.lastFailure, connected: false };
    let connected = false;
    let used: Promise<PgClient> | null = null;
    try {
      const opening = this.pool();
      // pool() takes (or starts) the open before its first await: this is the pool this call runs on.
      used = this.ready;
      const sql = await this.within(opening, connectMs);
      connected = true;
      return { ok: true, value: await this.within(call(sql), callMs - (performance.now() - startedMs)) };
    } catch (error) {
      // The pool was given up under this call because another call (a heartbeat, a kill-request look) met the
      // silent link first: its "connection closed" is that, and it is told as that (it is no new failure).
      const failure = error instanceof LedgerUnavailableError ? error : this.ledgerError(error);
      if (this.drops !== drops && this.dropReason && failure?.unreachable) return { ok: false, error: this.dropReason, connected };
      return { ok: false, error, connected };
    } finally {
      // Released while this attempt waited for its slot (a leg handing itself to the watcher): the pool it
      // opened after is given back too, as release() gives back one whose queries are still running. Only
      // that pool: one opened by a call that began after the release (a leg's teardown) is that call's.
      if (waited && this.releases !== releases && used !== null && this.ready === used) this.release();
    }
  }

  /** Cuts the calls started from now on to end by `atMs` (Backend.cutCallsAt); null lifts it. */
  cutCallsAt(atMs: number | null): void {
    this.cutAtMs = atMs;
  }

  /** `work`, or the unreachable error of expire() once `ms` pass first. */
  private async within<T>(work: Promise<T>, ms: number): Promise<T> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const expired = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(this.expire(ms)), Math.max(0, ms));
    });
    try {
      return await Promise.race([work, expired]);
    } finally {
      clearTimeout(timer);
    }
  }

  private expire(ms: number): LedgerUnavailableError {
    const ready = this.ready;
    this.ready = null;
    // A handshake still connecting is given up too: its socket would otherwise wait for connect_timeout.
    this.connecting?.abort();
    this.slotWait?.abort();
    this.dropPendingSlot();
    void ready?.then((client) => closeClient(client, 0)).catch(() => {});
    // So is a pool release() gave back while a call still ran on it: on a silent link its graceful close
    // would wait its whole 5 s for an answer that never comes, and keep the process past its deadline.
    for (const client of this.draining) void client.sql.close({ timeout: 0 }).catch(() => {});
    this.reachability.lose();
    const seconds = Math.round(Math.max(0, ms) / 100) / 10;
    const error = new LedgerUnavailableError(this.name, `no answer within ${seconds}s (the server or the network stopped answering)`, { unreachable: true });
    this.drops++;
    this.dropReason = error;
    this.silent = true;
    return error;
  }

  /** `error` as the ledger error it stands for (78, host/port/database, no password), else itself. */
  fault(error: unknown): unknown {
    const failure = asPgLedgerError(error, this.name, this.target.password);
    if (failure?.unreachable) this.reachability.lose();
    return failure ?? error;
  }

  /** The ledger error behind `error`, or null when it is not about the ledger. */
  ledgerError(error: unknown): LedgerUnavailableError | null {
    return asPgLedgerError(error, this.name, this.target.password);
  }

  private listening: SQL | null = null;
  private readonly listenerClosed = new Set<(error: unknown) => void>();

  /**
   * A client for LISTEN alone (its one connection is made by the first listen), kept when the pool is
   * released (a leg without a watcher holds only it while its command runs, §20) and when a call past its
   * deadline replaces the pool (a LISTEN made on the pool would die with it, unnoticed). Bun re-subscribes
   * its channels by itself after its connection drops; onListenerClosed tells of the drop.
   */
  listener(): SQL {
    if (this.closed) throw new LedgerUnavailableError(this.name, "the ledger was closed");
    const onclose = (error: unknown) => {
      for (const f of [...this.listenerClosed]) f(error);
    };
    this.listening ??= new SQL(clientOptions(this.target, { ...this.options.shape, limits: this.limits, max: 1, onclose }));
    return this.listening;
  }

  /** Calls `f` whenever the listener's connection closes (the server ended it, the link dropped); returns the removal. */
  onListenerClosed(f: (error: unknown) => void): () => void {
    this.listenerClosed.add(f);
    return () => void this.listenerClosed.delete(f);
  }

  /**
   * Gives every connection back without closing the ledger (§20: a leg holds none while its command runs):
   * the pool closes once its queries end, and the next call opens a new one (a version read, no migration).
   */
  release(): void {
    if (this.closed) return;
    const ready = this.ready;
    this.ready = null;
    this.releases++;
    void ready
      ?.then((client) => {
        this.draining.add(client);
        return closeClient(client, this.silent ? 0 : "graceful").finally(() => this.draining.delete(client));
      })
      .catch(() => {});
  }

  /**
   * Closes the pool without waiting: queries still running get a few seconds (none with `abandon`: a
   * read command's answer no longer matters once it ended; none on a link a call found silent: no answer
   * is coming), nothing holds the process longer.
   */
  close(options: { abandon?: boolean } = {}): void {
    this.closed = true;
    this.shut.abort();
    const ready = this.ready;
    this.ready = null;
    const now = options.abandon === true || this.silent;
    // An open still connecting is given up, not waited for: nothing holds the process past its command.
    this.connecting?.abort();
    this.slotWait?.abort();
    this.dropPendingSlot();
    void ready?.then((client) => closeClient(client, now ? 0 : "graceful")).catch(() => {});
    if (now) for (const client of this.draining) void client.sql.close({ timeout: 0 }).catch(() => {});
    void this.listening?.close({ timeout: now ? 0 : 5 }).catch(() => {});
    this.listening = null;
    // A handshake taken over but never used (the command ended before its first query).
    this.early?.discard();
    this.early = undefined;
  }

  private async open(): Promise<PgClient> {
    const schema = this.schema;
    const early = this.early;
    this.early = undefined;
    const drops = this.drops;
    const slot = early ? null : await this.nextSlot();
    // Given up (a call's deadline, close) while it waited for its slot: no handshake nobody would abort.
    if (!early && (this.drops !== drops || this.closed)) {
      slot?.release();
      throw this.dropReason && !this.closed ? this.dropReason : new LedgerUnavailableError(this.name, "the ledger was closed");
    }
    const pending = early ?? handshake(this.target, { ...this.options.shape, limits: this.limits }, this.clock, slot);
    this.connecting = pending;
    let handshaken: Handshake;
    try {
      handshaken = await pending.result;
    } finally {
      if (this.connecting === pending) this.connecting = undefined;
    }
    const { client, first } = handshaken;
    try {
      if (first.version === null && !this.options.create) {
        throw new UsageError(`nothing recorded yet: no ledger at ${this.name} (schema ${schema})`);
      }
      // Older (or absent, when creating): brought up to date; newer: refused by the runner (78).
      if (first.version !== MIGRATIONS.length) await migratePg(client);
      // Read with the version row when there was one; a schema made or completed just now is asked after.
      const current = first.currentSchema !== undefined ? first.currentSchema : await currentSchema(client.sql);
      if (current !== schema) throw elsewhere(this.name, schema, current);
      if (first.serverNow !== null) this.clock.record(first.serverNow, first.sent, first.received, first.sessionStart ?? first.serverNow);
      else await this.measureClock(client.sql);
      return client;
    } catch (error) {
      await closeClient(client, "graceful").catch(() => {});
      throw error;
    }
  }

  /** Gives back a slot taken for an open that did not happen (another call opened the pool meanwhile, or it was closed). */
  private dropPendingSlot(): void {
    const pending = this.slotFirst;
    this.slotFirst = null;
    void pending?.then((slot) => slot?.release()).catch(() => {});
  }

  /** The slot an attempt took for this open, else one waited for here for a connect timeout (a LISTEN's pool()). */
  private async nextSlot(): Promise<Slot | null> {
    const taking = this.slotFirst;
    this.slotFirst = null;
    return taking ? await taking.catch(() => this.takeSlot(this.target.connectTimeoutSeconds * 1000)) : this.takeSlot(this.target.connectTimeoutSeconds * 1000);
  }

  /**
   * One of the host's slots for this ledger (§20), waited for within what the caller has left to connect
   * (its attempt's share of --ledger-retry or the command's deadline), never longer: past it the open fails
   * as unreachable, so it is retried while the caller's patience lasts and then reported, as an outage is.
   */
  private async takeSlot(withinMs: number): Promise<Slot | null> {
    const place = this.options.slots;
    if (!place) return null;
    const wait = new AbortController();
    this.slotWait = wait;
    try {
      const slot = await waitForSlot(place.dir, place.count, withinMs, AbortSignal.any([wait.signal, this.shut.signal]));
      if (slot && (wait.signal.aborted || this.closed)) slot.release();
      else if (slot) return slot;
    } finally {
      if (this.slotWait === wait) this.slotWait = null;
    }
    throw this.slotsTaken(withinMs);
  }

  private slotsTaken(withinMs: number): LedgerUnavailableError {
    const seconds = Math.round(Math.max(0, withinMs) / 100) / 10;
    return new LedgerUnavailableError(this.name, `all ${this.options.slots?.count ?? 0} of this host's connection slots (LI_PG_SLOTS) stayed taken by other li processes for ${seconds}s`, { unreachable: true });
  }

  /** One round trip to the server's clock; a failure keeps the previous offset (the next call tries again). */
  private async measureClock(sql: SQL): Promise<void> {
    this.measuring = true;
    try {
      const sent = this.clock.hostNow();
      const [row] = await sql.unsafe(`SELECT ${SERVER_NOW_SQL} AS now`);
      this.clock.record(Number(row.now), sent, this.clock.hostNow());
    } catch {
      // Only the clock's freshness is at stake; the operation that needed the ledger reports real failures.
    } finally {
      this.measuring = false;
    }
  }
}

/** The version row, the session's schema and the server's clock in one statement; a missing schema or table reads as version null. */
async function readFirst(sql: SQL, schema: string, clock: ServerClock): Promise<FirstAnswer> {
  const sent = clock.hostNow();
  // Never a statement on a missing table (a fresh database): the server would log its failure for every process.
  const rows = await sql.unsafe(`SELECT ${versionColumnsSql(1)}, current_schema() AS current_schema, ${SERVER_NOW_SQL} AS now, ${SESSION_START_SQL} AS start`, [versionTableName(schema)]);
  const received = clock.hostNow();
  const row = rows[0] as { present: boolean; version: string | null; current_schema: string | null; now: number; start: number | null };
  // A version table without its row (a migration that never committed) reads 0, as good as none.
  const version = versionOf(row);
  if (version === null) return { version: null, serverNow: null, sessionStart: null, sent, received };
  const start = row.start === null || row.start === undefined ? null : Number(row.start);
  return { version, currentSchema: row.current_schema, serverNow: Number(row.now), sessionStart: start, sent, received };
}

async function currentSchema(sql: SQL): Promise<string | null> {
  const [row] = await sql.unsafe("SELECT current_schema() AS current_schema");
  return (row?.current_schema as string | null | undefined) ?? null;
}

/**
 * A session whose unqualified names do not reach li's schema: li names its tables without a schema and
 * sets the search_path at startup, so only something between li and the server (a pooler told to ignore
 * li's search_path, docs/postgres.md "Behind a connection pooler") can cause this. Refused before any
 * statement could read or write another schema's tables of the same names.
 */
function elsewhere(name: string, schema: string, current: string | null): LedgerUnavailableError {
  const where = current === null ? "no existing schema" : `schema ${current}`;
  return new LedgerUnavailableError(
    name,
    `the session's search_path leads to ${where}, not li's schema ${schema}: a pooler dropped li's search_path; set it on the server (ALTER DATABASE or ALTER ROLE … SET search_path = ${schema}), docs/postgres.md "Behind a connection pooler"`,
  );
}

const TIMED_OUT = Symbol("timed out");

/** `work`'s value, or TIMED_OUT once `ms` pass first (work goes on: another caller may still want it). */
async function untilOrAfter<T>(work: Promise<T>, ms: number): Promise<T | typeof TIMED_OUT> {
  if (!Number.isFinite(ms)) return work;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<typeof TIMED_OUT>((resolve) => {
    timer = setTimeout(() => resolve(TIMED_OUT), Math.max(0, ms));
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Resolves after `ms`, or at once when one of `signals` aborts. */
function pauseFor(ms: number, signals: readonly (AbortSignal | undefined)[]): Promise<void> {
  const any = AbortSignal.any(signals.filter((s): s is AbortSignal => s !== undefined));
  return new Promise((resolve) => {
    if (any.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      any.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    any.addEventListener("abort", done, { once: true });
  });
}
