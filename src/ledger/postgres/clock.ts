// The ledger's clock on PostgreSQL (SPEC §14 "Time"): this host's clock plus its offset to the server's
// clock_timestamp(), so every time li writes or compares (heartbeats, updated_at, leases, sweep ages) is
// the database's, and hosts whose clocks disagree still agree on the ledger. The offset is measured when
// the pool connects (the midpoint of one round trip) and again at most once a minute while a process
// keeps using the ledger (a watcher, a leg's heartbeat), so a drifting host clock is followed.

/** A long-running process re-measures the offset when it is older than this. */
export const CLOCK_REMEASURE_SECONDS = 60;

/** The server's clock in Unix seconds, from one round trip's result. */
export const SERVER_NOW_SQL = "extract(epoch from clock_timestamp())::float8";

export class ServerClock {
  private offsetSeconds = 0;
  private measuredAtMs = Number.NEGATIVE_INFINITY;

  constructor(private readonly hostNowMs: () => number = Date.now) {}

  /** Unix seconds on the server's clock (this host's until the first measurement). */
  now(): number {
    return this.hostNowMs() / 1000 + this.offsetSeconds;
  }

  /** This host's time in ms, for bracketing a round trip. */
  hostMs(): number {
    return this.hostNowMs();
  }

  /** Records a measurement: the server said `serverSeconds` somewhere between `sentMs` and `receivedMs`. */
  record(serverSeconds: number, sentMs: number, receivedMs: number): void {
    this.offsetSeconds = serverSeconds - (sentMs + receivedMs) / 2000;
    this.measuredAtMs = receivedMs;
  }

  /** The offset in seconds (server minus host). */
  get offset(): number {
    return this.offsetSeconds;
  }

  /** Whether a measurement is due (never measured, or older than CLOCK_REMEASURE_SECONDS). */
  stale(): boolean {
    return this.hostNowMs() - this.measuredAtMs >= CLOCK_REMEASURE_SECONDS * 1000;
  }
}
